"""Child process: run a user's script and record the first call of one target.

Run as `python -m kernelevo.targets.capture_child SPEC.json` (never imported by the server).
A trace hook watches Python calls; when the target is called, its arguments (and the
constructor arguments of that instance) are written as JSON and the process ends at once,
so a long training script costs only the time to reach its first step.
"""

from __future__ import annotations

import ast
import json
import os
import runpy
import sys
import threading

from kernelevo.atomic_write import write_atomic

_MAX_ITEMS = 16


def _spec_of(value, torch) -> dict:
    if torch is not None and isinstance(value, torch.Tensor):
        spec = {
            "kind": "tensor",
            "shape": list(value.shape),
            "dtype": str(value.dtype).replace("torch.", ""),
            "device": str(value.device),
            "contiguous": bool(value.is_contiguous()),
            "requires_grad": bool(value.requires_grad),
        }
        if (
            not value.dtype.is_floating_point
            and not value.dtype.is_complex
            and value.dtype != torch.bool
        ):
            spec["integer"] = True
            if value.numel():
                spec["min"], spec["max"] = int(value.min()), int(value.max())
        return spec
    if isinstance(value, (list, tuple)) and len(value) <= _MAX_ITEMS:
        return {"kind": type(value).__name__, "items": [_spec_of(v, torch) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        text = repr(value)
        try:
            if ast.literal_eval(text) == value or value != value:
                return {"kind": "value", "repr": text}
        except (ValueError, SyntaxError):
            pass
    fields = getattr(type(value), "__dataclass_fields__", None)
    if fields is not None:
        specs = {name: _spec_of(getattr(value, name), torch) for name in fields}
        if all(s["kind"] == "value" for s in specs.values()):
            return {
                "kind": "dataclass",
                "type": type(value).__name__,
                "fields": {k: s["repr"] for k, s in specs.items()},
            }
    data = getattr(value, "__dict__", None)
    if isinstance(data, dict) and data and all(is_plain_data(v) for v in data.values()):
        try:
            rebuilt = type(value)(**data)
            same = vars(rebuilt) == data
        except Exception:  # a class that is not built from its fields: rebuild as a namespace
            same = False
        return {
            "kind": "config",
            "type": type(value).__name__,
            "rebuild": "class" if same else "namespace",
            "values": dict(data),
            "fields": sorted(data),
        }
    return {"kind": "unsupported", "type": type(value).__name__}


def is_plain_data(value: object) -> bool:
    """Whether a value survives JSON as itself (so it can be written into a task as data)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(is_plain_data(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_plain_data(v) for k, v in value.items())
    return False


def save_configs(specs: list[dict], path: str | None) -> None:
    """Config objects become data next to the task: torch.save of their fields, by argument index."""
    configs = [(i, s) for i, s in enumerate(specs) if s.get("kind") == "config" and "values" in s]
    if not configs or not path:
        for _, s in configs:
            s["kind"] = "unsupported"
        return
    import torch

    torch.save({str(i): s.pop("values") for i, s in configs}, path)
    for i, s in configs:
        s["index"], s["data"] = i, os.path.basename(path)


def _arguments(frame, skip_self: bool) -> tuple[list[str], list]:
    code = frame.f_code
    names = list(code.co_varnames[: code.co_argcount])
    if skip_self and names:
        names = names[1:]
    values = [frame.f_locals[n] for n in names]
    if code.co_flags & 0x04:  # *args
        extra = frame.f_locals.get(code.co_varnames[code.co_argcount + code.co_kwonlyargcount], ())
        names += [f"*{i}" for i in range(len(extra))]
        values += list(extra)
    return names, values


def main(spec_path: str) -> int:
    with open(spec_path) as fh:
        spec = json.load(fh)
    target_file = spec["file"]
    files: dict[str, bool] = {}
    inits: dict[int, tuple[list[str], list[dict]]] = {}

    def ours(code) -> bool:
        hit = files.get(code.co_filename)
        if hit is None:
            hit = files[code.co_filename] = os.path.realpath(code.co_filename) == target_file
        return hit

    def tracer(frame, event, arg):
        code = frame.f_code
        if event != "call" or not ours(code):
            return None
        qual = getattr(code, "co_qualname", code.co_name)
        if qual == spec["init"]:
            names, values = _arguments(frame, True)
            torch = sys.modules.get("torch")
            inits[id(frame.f_locals.get("self"))] = (names, [_spec_of(v, torch) for v in values])
        elif qual == spec["call"]:
            names, values = _arguments(frame, spec["method"])
            torch = sys.modules.get("torch")
            init_names, init = inits.get(id(frame.f_locals.get("self")), ([], []))
            save_configs(init, spec.get("init_data"))
            out = {
                "names": names,
                "args": [_spec_of(v, torch) for v in values],
                "init_names": init_names,
                "init": init,
            }
            write_atomic(spec["out"], json.dumps(out))
            sys.stdout.flush()
            os._exit(0)
        return None

    script = spec["script"]
    sys.argv = [script]
    sys.path.insert(0, os.path.dirname(script))
    threading.settrace(tracer)
    sys.settrace(tracer)
    try:
        if spec.get("pytest"):
            import pytest

            pytest.main(
                [script, "-x", "-q", "-p", "no:cacheprovider"]
                + (["-n", "0"] if _has_xdist() else [])
            )
        else:
            runpy.run_path(script, run_name="__main__")
    finally:
        sys.settrace(None)
    return 0


def _has_xdist() -> bool:
    import importlib.util

    return importlib.util.find_spec("xdist") is not None


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
