"""Child process: run a user's script and record the first call of one target.

Run as `python -m kernelevo.targets.capture_child SPEC.json` (never imported by the server).
A trace hook watches Python calls; when the target is called, its arguments (and the
constructor arguments of that instance) are written as JSON and the process ends at once,
so a long training script costs only the time to reach its first step.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import os
import runpy
import sys
import threading
import types

from kernelevo.atomic_write import write_atomic
from kernelevo.targets.capture_defaults import (
    SecondCall,
    keywords_passed,
    literal_defaults,
    target_function,
)

_MAX_ITEMS = 16


def _spec_of(value, torch, configs: bool = True) -> dict:
    """How to rebuild `value` in a task; `configs`: objects may be saved as their fields (the
    constructor's config; a call's object argument, a cache or a tokenizer, is not a config)."""
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
        return {
            "kind": type(value).__name__,
            "items": [_spec_of(v, torch, configs) for v in value],
        }
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
    config = _config_spec(value) if configs else None
    if config is not None:
        return config
    return {"kind": "unsupported", "type": type(value).__name__}


def config_data(obj: object) -> dict:
    """A config object's fields as its class gives them: a dataclass's fields, its `to_dict()` where
    it has one (Hugging Face's configs), else its attributes (TypeError for an object without)."""
    if dataclasses.is_dataclass(obj):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict) and not isinstance(obj, types.SimpleNamespace):
        return to_dict()  # type: ignore[no-any-return]
    return dict(vars(obj))


def _plain_fields(value: object) -> tuple[dict, bool] | None:
    """A config object's fields that are data (config_data's), and whether nothing was left out;
    None for no fields."""
    try:
        raw = config_data(value)
    except Exception:  # no attributes, or a to_dict() that needs more than the object
        return None
    if not isinstance(raw, dict) or not raw:
        return None
    fields = {k: v for k, v in raw.items() if isinstance(k, str) and is_plain_data(v)}
    return fields, len(fields) == len(raw)


def _config_spec(value: object) -> dict | None:
    """A config object saved as its fields: rebuilt as its own class where that class, given the
    fields, has the same fields again (a PretrainedConfig's id2label, with int keys, is left to its
    default then), else as a namespace when every field is data; None for anything else."""
    if isinstance(value, type) or callable(value):
        return None
    got = _plain_fields(value)
    if got is None:
        return None
    fields, whole = got
    try:
        rebuilt = type(value)(**fields)
        again = _plain_fields(rebuilt)
        same = again is not None and again[0] == fields
    except Exception:  # a class that is not built from its fields
        same = False
    if not same and not whole:
        return None
    spec = {
        "kind": "config",
        "type": type(value).__name__,
        "rebuild": "class" if same else "namespace",
        "values": copy.deepcopy(fields),  # as it is now, whatever the user's code changes later
        "fields": sorted(fields),
    }
    if same:  # what the user's code set after construction (a model's choice of attention)
        now, absent = vars(rebuilt), object()
        spec["attrs"] = copy.deepcopy(
            {
                k: v
                for k, v in getattr(value, "__dict__", {}).items()
                if isinstance(k, str) and is_plain_data(v) and now.get(k, absent) != v
            }
        )
    return spec


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

    data = {str(i): s["values"] for i, s in configs}
    data.update({f"{i}.attrs": s["attrs"] for i, s in configs if s.get("attrs")})
    torch.save(data, path)
    for i, s in configs:
        values = s.pop("values")  # as data beside the task; the sizes they hold stay in the spec
        s["attrs"] = sorted(s.get("attrs") or {})
        s["ints"] = sorted({v for v in values.values() if type(v) is int})
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


def _init_arguments(frame) -> tuple[list[str], list, list[str]]:
    """A constructor's arguments, then the ones it takes by name only: keyword-only parameters
    given a value other than their default, and what **kwargs received. The last list names
    those, which the task's get_init_inputs() lists last and its Model passes on by name."""
    names, values = _arguments(frame, True)
    code = frame.f_code
    fn = target_function(frame)
    defaults = getattr(fn, "__kwdefaults__", None) or {}
    start = code.co_argcount
    by_name = []
    for name in code.co_varnames[start : start + code.co_kwonlyargcount]:
        value = frame.f_locals.get(name)
        if name not in defaults or value is not defaults[name]:
            by_name.append(name)
            values.append(value)
    if code.co_flags & 0x08:  # **kwargs
        at = start + code.co_kwonlyargcount + (1 if code.co_flags & 0x04 else 0)
        extra = frame.f_locals.get(code.co_varnames[at]) or {}
        for name, value in extra.items():
            if isinstance(name, str) and name.isidentifier() and name not in by_name:
                by_name.append(name)
                values.append(value)
    return names + by_name, values, by_name


def main(spec_path: str) -> int:
    with open(spec_path) as fh:
        spec = json.load(fh)
    target_file = spec["file"]
    files: dict[str, bool] = {}
    inits: dict[int, tuple[list[str], list[dict], list[str]]] = {}
    pending: list[SecondCall] = []  # the target's recorded call, awaiting its return

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
            names, values, by_name = _init_arguments(frame)
            torch = sys.modules.get("torch")
            specs = [_spec_of(v, torch) for v in values]
            inits[id(frame.f_locals.get("self"))] = (names, specs, by_name)
        elif qual == spec["call"] and not pending:
            names, values = _arguments(frame, spec["method"])
            torch = sys.modules.get("torch")
            init_names, init, by_name = inits.get(id(frame.f_locals.get("self")), ([], [], []))
            save_configs(init, spec.get("init_data"))
            out = {
                "names": names,
                "args": [_spec_of(v, torch, configs=False) for v in values],
                "init_names": init_names,
                "init": init,
                "init_keywords": by_name,
            }
            keywords = keywords_passed(frame)
            fn = target_function(frame)
            swaps = literal_defaults(fn, names, out["args"]) if fn is not None else {}
            if torch is None or fn is None or not (keywords or swaps):
                _finish(spec["out"], out, keywords)
            plain = {
                k: v
                for k, v in keywords.items()
                if _spec_of(v, torch, configs=False)["kind"] == "value"
            }
            check = SecondCall(frame, spec["method"], values, swaps, torch, plain)

            def at_return(frame, event, arg):
                check.on_event(frame, event, arg)
                if check.verdict is not None:
                    _finish(spec["out"], out, keywords, check)
                return at_return

            pending.append(check)
            frame.f_trace_lines = False
            return at_return
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


def _finish(path: str, out: dict, keywords: dict, check: SecondCall | None = None) -> None:
    """Write the recording and end the process: with what the task leaves out where a second call
    showed the outputs are the same without it, else with why it cannot be left out."""
    names = out["names"]
    if check is not None and check.verdict == "same":
        out["replaced"] = [
            [names[i], out["args"][i]["type"], repr(d)] for i, d in check.swaps.items()
        ]
        for i, default in check.swaps.items():
            out["args"][i] = {"kind": "value", "repr": repr(default)}
        out["dropped"] = sorted(k for k in keywords if k not in check.kept)
        out["keywords"] = {k: repr(v) for k, v in check.kept.items()}
    elif keywords or (check is not None and check.swaps):
        torch = sys.modules.get("torch")
        out["kept_out"] = {
            "keywords": sorted(keywords),
            "values": {k: _spec_of(v, torch, configs=False) for k, v in sorted(keywords.items())},
            "why": check.verdict if check is not None else "the target could not be called again",
        }
    write_atomic(path, json.dumps(out))
    sys.stdout.flush()
    os._exit(0)


def _has_xdist() -> bool:
    import importlib.util

    return importlib.util.find_spec("xdist") is not None


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
