"""Inputs recorded while the user's code runs (a script named with --script, a workspace script
or test, the signature probe), turned into get_inputs()/get_init_inputs() source.

The recording (shapes, dtypes, values, config objects saved as data) happens in a child
process (capture_child.py); this side starts it and writes the source, scaling sizes of real
use down to a CPU-sized copy.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile

from kernelevo.targets.example_inputs import ExampleInputs, NoExampleInputs, a_named
from kernelevo.targets.reference_call import Reference
from kernelevo.targets.small_sizes import (
    SmallSizes,
    derive,
    held_by_configs,
    ints_in_spec,
    name_sizes_in_expr,
)
from kernelevo.text_file import file_problem


def capture_from_script(
    script: str,
    user_file: str,
    ref: Reference,
    timeout: float = 300.0,
    cpu_only: bool = False,
    pytest: bool = False,
    init_data: str | None = None,
) -> dict:
    """Run `script` in a child process and record the target's first call (shapes, dtypes, devices).
    `cpu_only` hides the GPUs (scripts found in the workspace, not named by the user)."""
    problem = file_problem(script, "no such script")
    if problem:
        raise NoExampleInputs(problem)
    init_q = (
        f"{ref.cls.qualname}.__init__" if ref.cls is not None and ref.init is not None else None
    )
    call_q = f"{ref.cls.qualname}.{ref.call.name}" if ref.cls is not None else ref.qualname
    with tempfile.TemporaryDirectory(prefix="kernelevo-capture-") as tmp:
        out_path, init_path = os.path.join(tmp, "captured.json"), os.path.join(tmp, "init.pt")
        spec = {
            "script": os.path.abspath(script),
            "file": os.path.realpath(user_file),
            "init": init_q,
            "call": call_q,
            "method": ref.cls is not None,
            "out": out_path,
            "pytest": pytest,
            "init_data": init_path,
        }
        spec_path = os.path.join(tmp, "spec.json")
        with open(spec_path, "w") as fh:
            json.dump(spec, fh)
        if cpu_only:
            from kernelevo.targets.input_sources import readable_roots
            from kernelevo.targets.user_run import run_user_code

            run = run_user_code(
                "kernelevo.targets.capture_child",
                [spec_path],
                [*readable_roots(user_file), os.path.dirname(os.path.abspath(script))],
                tmp,
                timeout,
                cwd=os.path.dirname(os.path.abspath(script)),
            )
            if run.timed_out:
                raise NoExampleInputs(f"{script}: did not call {call_q} within {timeout:.0f} s")
            returncode, out, err = run.returncode, run.stdout, run.stderr
        else:
            try:
                proc = subprocess.run(
                    [sys.executable, "-m", "kernelevo.targets.capture_child", spec_path],
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
            except subprocess.TimeoutExpired:
                raise NoExampleInputs(
                    f"{script}: did not call {call_q} within {timeout:.0f} s"
                ) from None
            returncode, out, err = proc.returncode, proc.stdout, proc.stderr
        if not os.path.exists(out_path):
            tail = (err or out).strip().splitlines()[-3:]
            raise NoExampleInputs(
                f"{script}: exited (code {returncode}) without calling {call_q}"
                + (": " + " | ".join(tail) if tail else "")
            )
        with open(out_path) as fh:
            captured = json.load(fh)
        attach_init_blob(captured, init_path)
        return captured


def attach_init_blob(captured: dict, path: str | None) -> None:
    """The torch.save bytes of saved constructor data, carried inside the task (base64)."""
    if path and os.path.exists(path):
        with open(path, "rb") as fh:
            captured["init_blob"] = base64.b64encode(fh.read()).decode()


def _id_bound(top: int, small: SmallSizes) -> str:
    """The bound recorded ids stay below, written so they stay below a scaled vocabulary too:
    `max + 1` where that is a size; else, where a size lies just above it (token ids drawn from a
    vocabulary of 500 may reach only 496), the smaller of the two, so the sizes as given draw
    below `max + 1` as recorded and the small sizes below the scaled size."""
    if top in small.sizes:
        return small.name(top)
    above = [s for s in small.sizes if top < s <= top + max(16, top // 8)]
    return f"min({top}, {small.name(min(above))})" if above else str(top)


def _value_code(spec: dict, what: str, small: SmallSizes | None = None, why: str = "") -> str:
    small = small or SmallSizes()

    def size(v: int) -> str:
        return small.name(v) if v in small.sizes else str(v)

    kind = spec.get("kind")
    if kind == "tensor":
        dims = [size(d) for d in spec["shape"]]
        shape = f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"
        dtype = spec["dtype"]
        if dtype == "bool":
            return f"torch.rand({shape}) < 0.5"
        if spec.get("integer"):
            top = _id_bound(spec.get("max", 0) + 1, small)
            return f"torch.randint({spec.get('min', 0)}, {top}, {shape}, dtype=torch.{dtype})"
        return f"torch.randn({shape}, dtype=torch.{dtype})"
    if kind == "value":
        return name_sizes_in_expr(spec["repr"], small)
    if kind in ("list", "tuple"):
        items = ", ".join(_value_code(s, what, small) for s in spec["items"])
        return (
            f"[{items}]" if kind == "list" else f"({items}{',' if len(spec['items']) == 1 else ''})"
        )
    if kind == "dataclass":
        fields = ", ".join(f"{k}={name_sizes_in_expr(v, small)}" for k, v in spec["fields"].items())
        return f"{spec['type']}({fields})"
    if kind == "config":
        key = str(spec["index"])
        saved = f"_kernelevo_saved()[{key!r}]"
        if spec["rebuild"] == "namespace":
            return f"types.SimpleNamespace(**{saved})"
        if spec.get("attrs"):
            return f"_kernelevo_config({spec['type']}, {key!r})"
        return f"{spec['type']}(**{saved})"
    raise NoExampleInputs(
        f"{what} is an object of type {spec.get('type', '?')} that cannot be rebuilt from a recording"
        f"{why}; use @kernelevo.example(...) to say how to make it"
    )


def inputs_from_capture(
    captured: dict,
    script: str,
    source: str = "script",
    note: str | None = None,
    how: str | None = None,
) -> ExampleInputs:
    args = captured["args"]
    names = captured.get("names") or [f"arg{i}" for i in range(len(args))]
    kept_out = captured.get("kept_out")
    _refuse_kept_out(kept_out or {}, script)
    keywords = dict(captured.get("keywords") or {})
    init_specs = list(captured.get("init") or [])
    small = SmallSizes()
    if source != "signature":  # sizes of real use: the CPU gets a scaled-down copy
        small = derive(
            (v for s in list(args) + init_specs for v in ints_in_spec(s)),
            keep=held_by_configs(list(args) + init_specs),
        )
    why = f" ({kept_out['why']} with its default)" if kept_out else ""
    parts = [
        _value_code(s, f"{script}: argument {n!r}", small, why)
        for s, n in zip(args, names, strict=False)
    ]
    init = [
        _value_code(s, f"{script}: constructor argument {n!r}", small)
        for s, n in zip(init_specs, captured.get("init_names") or [], strict=False)
    ]
    described = "; ".join(_describe(n, s) for n, s in zip(names, args, strict=False))
    configs = [s for s in init_specs if s.get("kind") == "config"]
    loader = ""
    if configs and not captured.get("init_blob"):
        raise NoExampleInputs(
            f"{script}: the constructor's config object could not be saved as data"
        )
    if configs:
        blob = captured["init_blob"]
        wrapped = "\n".join(f"    {blob[i : i + 96]!r}" for i in range(0, len(blob), 96))
        loader = (
            "import base64 as _kernelevo_base64\nimport io as _kernelevo_io\nimport types\n\n"
            "# The constructor's config objects as data: torch.save of their fields (base64), so any config\n"
            "# class works without being rebuilt as source.\n"
            f"_KERNELEVO_INIT_DATA = (\n{wrapped}\n)\n\n\ndef _kernelevo_saved():\n"
            "    return torch.load(_kernelevo_io.BytesIO(_kernelevo_base64.b64decode(_KERNELEVO_INIT_DATA)), "
            "weights_only=True)\n\n\n"
        )
        if any(s.get("attrs") for s in configs):
            loader += (
                "def _kernelevo_config(cls, key):\n"
                "    # built from its fields, then the attributes the recorded run had set on it since\n"
                "    saved = _kernelevo_saved()\n    config = cls(**saved[key])\n"
                "    vars(config).update(saved.get(key + '.attrs', {}))\n    return config\n\n\n"
            )
    label = how or f"captured from {os.path.basename(script)}"
    already_small = (
        "SMALL = {}  # the example inputs are already small sizes: the CPU runs them as they are\n\n\n"
        if source == "signature"
        else ""
    )
    code = (
        f"{already_small}{loader}def get_inputs():\n    # {label}: {described}\n"
        f"    return [{', '.join(parts)}]\n\n\ndef get_init_inputs():\n    return [{', '.join(init)}]\n"
    )
    uses = (
        {"torch"}
        | {s["type"] for s in list(args) + init_specs if s.get("kind") == "dataclass"}
        | {s["type"] for s in configs if s["rebuild"] == "class"}
    )
    note = (note or f"captured while running {script}") + _left_out(captured)
    if keywords:
        passed = ", ".join(f"{k}={v}" for k, v in keywords.items())
        note += (
            f"; keyword arguments {passed} passed as the recorded call passed them "
            "(without them the outputs differ)"
        )
    ex = ExampleInputs(source, code, note, uses, small=small, keywords=keywords)
    ex.init_blob = captured.get("init_blob", "") if configs else ""
    ex.init_keywords = [str(k) for k in captured.get("init_keywords") or []]
    if captured.get("names") and all(n.isidentifier() for n in names):  # not a *args entry
        ex.names = list(names)
    return ex


def _refuse_kept_out(kept_out: dict, script: str) -> None:
    """Keyword arguments the outputs need and a task cannot pass (a tensor, an object)."""
    names = kept_out.get("keywords") or []
    if not names:
        return
    values = kept_out.get("values") or {}
    kinds = ", ".join(_kind(n, values.get(n, {})) for n in names)
    raise NoExampleInputs(
        f"{script}: the call passes keyword arguments {kinds} that a task cannot pass as fixed "
        f"values, and {kept_out.get('why', 'they matter')}; "
        "use @kernelevo.example(...) to say how to call it"
    )


def _kind(name: str, spec: dict) -> str:
    if spec.get("kind") == "value":
        return f"{name}={spec['repr']}"
    if spec.get("kind") == "tensor":
        return f"{name} (a tensor {spec['dtype']}{list(spec['shape'])})"
    return f"{name} ({a_named(spec.get('type', spec.get('kind', 'value')))})" if spec else name


def _left_out(captured: dict) -> str:
    """What the recorded call passed and the task does not, shown the same outputs without it."""
    parts = [
        f"{n} ({a_named(t)}) left at its default {d}" for n, t, d in captured.get("replaced") or []
    ]
    if captured.get("dropped"):
        parts.append(f"keyword arguments {', '.join(captured['dropped'])} not passed")
    return f"; {' and '.join(parts)}: a second call gave the same outputs" if parts else ""


def _describe(name: str, spec: dict) -> str:
    if spec.get("kind") == "tensor":
        layout = "contiguous" if spec.get("contiguous", True) else "non-contiguous"
        return (
            f"{name} {spec['dtype']}{list(spec['shape'])} on {spec.get('device', 'cpu')} ({layout})"
        )
    if spec.get("kind") in ("list", "tuple"):  # a layer's (cos, sin) pair
        items = ", ".join(_describe("", s).strip().removeprefix("= ") for s in spec["items"])
        return f"{name} = {spec['kind']} of ({items})"
    return f"{name} = {spec.get('repr', spec.get('type', '?'))}"
