"""Child process: find example inputs for a target from its signature alone, by trying them.

Run as `python -m kernelevo.targets.probe_child SPEC.json`. It imports a draft of the task
(the user's code with placeholder getters), builds the constructor's arguments from type
hints, defaults, config classes and parameter names at small sizes, then calls the target
with guessed tensors until one call runs. Config objects are written as data (torch.save of
their fields) so that any config class works, not only ones we could write as source.
Prints one JSON line: the capture (same shape as capture_child's) or why nothing fitted.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import re
import sys
import time
import types
import typing

from kernelevo.targets.capture_child import is_plain_data

_SIZE = 64  # hidden sizes, channels, embedding widths
_NAMED_INTS = (
    (("head",), 4),
    (("layer", "depth", "n_block", "num_block"), 2),
    (("vocab", "n_token", "num_token", "num_class", "classes"), 128),
    (
        (
            "ctx",
            "block_size",
            "max_position",
            "seq_len",
            "max_seq",
            "context",
            "n_positions",
            "max_len",
        ),
        32,
    ),
    (("mel", "in_chans", "in_channels"), 16),
    (("intermediate", "ffn", "mlp_dim", "hidden_dim", "inner"), 128),
    (("n_rep", "repeat", "groups", "group"), 2),
    (("kernel_size",), 3),
    (("stride",), 1),
    (("padding",), 0),
    (("idx",), 0),
)
_TOKEN_NAMES = (
    "idx",
    "ids",
    "input_ids",
    "tokens",
    "token_ids",
    "labels",
    "targets",
    "indices",
    "position_ids",
)
_SIZE_NAME = re.compile(
    r"^(n_|num_)|(^|_)(length|len|size|channels|width|height|count|steps|seq_len)$"
)
# attribute names of a config that hold sizes; constructor defaults also shrink these two
_CONFIG_SIZE_WORDS = (
    "size",
    "dim",
    "embd",
    "embed",
    "state",
    "width",
    "n_",
    "num_",
    "head",
    "layer",
    "vocab",
    "ctx",
    "hidden",
    "channels",
    "features",
)
_SHRINK_WORDS = (*_CONFIG_SIZE_WORDS, "position", "intermediate")
_CONFIG_NAMES = ("config", "cfg", "conf", "args", "hparams", "params", "dims", "opt", "settings")


def guess_int(name: str, ctor: bool) -> int:
    low = name.lower()
    if not ctor and low in ("dim", "axis"):
        return -1
    for keys, value in _NAMED_INTS:
        if any(k in low for k in keys):
            return value
    return _SIZE


def guess_scalar(name: str, kind: type, ctor: bool):  # type: ignore[no-untyped-def]
    low = name.lower()
    if kind is bool:
        return "bias" in low
    if kind is float:
        if "drop" in low or "pdrop" in low:
            return 0.0
        if "eps" in low:
            return 1e-5
        if "theta" in low or "base" in low:
            return 10000.0
        return 0.5
    if kind is int:
        return guess_int(name, ctor)
    return None


class GuessedConfig(types.SimpleNamespace):
    """A config whose attributes are guessed by name when first read (CfgNode-style objects)."""

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        if name.startswith("__"):
            raise AttributeError(name)
        low = name.lower()
        if any(w in low for w in ("drop", "eps", "theta", "scale", "std", "rate")):
            value = guess_scalar(name, float, True)
        elif low.startswith(("use_", "is_", "has_", "tie_", "output_")) or low in (
            "bias",
            "flash",
            "causal",
        ):
            value = "bias" in low
        elif any(w in low for w in _CONFIG_SIZE_WORDS):
            value = guess_int(name, True)
        else:
            value = None
        setattr(self, name, value)
        return value


def _shrink(name: str, value):  # type: ignore[no-untyped-def]
    """Size-like integers become small ones; everything else keeps its default."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 8:
        return value
    low = name.lower()
    if any(w in low for w in _SHRINK_WORDS):
        return guess_int(name, True)
    return value


def build_config(cls: type, name: str):  # type: ignore[no-untyped-def]
    """A config object at small sizes: a dataclass, a class that builds from its defaults
    (PretrainedConfig subclasses), or a guessing namespace when nothing says what it is."""
    if cls is None or cls is typing.Any:
        return GuessedConfig()
    if dataclasses.is_dataclass(cls):
        kwargs = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                kwargs[f.name] = _shrink(f.name, f.default)
            elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                continue
            else:
                kind = (
                    f.type
                    if isinstance(f.type, type)
                    else {"int": int, "float": float, "bool": bool}.get(str(f.type))
                )
                kwargs[f.name] = guess_scalar(f.name, kind or int, True)
        return cls(**kwargs)
    obj = cls()
    for key, value in list(vars(obj).items()):
        small = _shrink(key, value)
        if small is not value:
            setattr(obj, key, small)
    return obj


def config_fields(obj) -> dict:  # type: ignore[no-untyped-def]
    if dataclasses.is_dataclass(obj):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    to_dict = getattr(obj, "to_dict", None)
    data = (
        to_dict()
        if callable(to_dict) and not isinstance(obj, types.SimpleNamespace)
        else dict(vars(obj))
    )
    return {k: v for k, v in data.items() if is_plain_data(v)}


def _hints(fn) -> dict:  # type: ignore[no-untyped-def]
    try:
        return typing.get_type_hints(fn)
    except Exception:  # hints naming things the file imports only for type checking
        return {}


def _unoptional(hint):  # type: ignore[no-untyped-def]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if len(args) == 1 and type(None) in typing.get_args(hint) else hint


def constructor_args(cls: type) -> tuple[list[str], list]:
    sig = inspect.signature(cls.__init__)
    hints = _hints(cls.__init__)
    names, values = [], []
    for p in list(sig.parameters.values())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is not p.empty:
            continue
        hint = _unoptional(hints.get(p.name))
        if hint in (int, float, bool):
            value = guess_scalar(p.name, hint, True)
        elif (
            isinstance(hint, type)
            and not issubclass(hint, (str, bytes))
            and hint.__module__ != "builtins"
        ):
            if "torch" in hint.__module__:
                raise LookupError(
                    f"constructor argument {p.name!r} is a {hint.__name__}; say how to make it "
                    "(see the suggestion below)"
                )
            value = build_config(hint, p.name)
        elif p.name.lower() in _CONFIG_NAMES or p.name.lower().endswith(("config", "cfg")):
            value = GuessedConfig()
        else:
            value = guess_scalar(p.name, int, True)
        names.append(p.name)
        values.append(value)
    return names, values


def _tensor_shapes(ints: list[int]) -> list[tuple[int, ...]]:
    dims = list(dict.fromkeys([v for v in ints if 1 < v <= 512] + [_SIZE]))
    shapes: list[tuple[int, ...]] = []
    for d in dims:
        shapes += [(2, 8, d), (2, d), (2, 4, 8, d), (8, d)]
    for a in dims:
        for b in dims:
            if a != b:
                shapes += [(2, a, b), (2, a, 2 * b)]
    shapes += [(2, 16, 8, 8), (2, _SIZE, 8, 8), (_SIZE,), (2, 8)]
    return list(dict.fromkeys(shapes))


def call_candidates(fn, skip_self: bool, ints: list[int], vocab: int):  # type: ignore[no-untyped-def]
    """(names, values) tuples to try, most likely first."""
    import torch

    sig = inspect.signature(fn)
    hints = _hints(fn)
    params = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if skip_self and params:
        params = params[1:]
    required = [p for p in params if p.default is p.empty]
    scalar: dict[str, object] = {}
    tensors: list[str] = []
    for p in required:
        hint = _unoptional(hints.get(p.name))
        if hint in (int, float, bool):
            scalar[p.name] = guess_scalar(p.name, hint, False)
        elif p.name in ("n_rep", "repeats", "groups", "num_groups") or hint is str:
            scalar[p.name] = guess_int(p.name, False) if hint is not str else "none"
        elif hint is None and _SIZE_NAME.search(p.name.lower()):
            scalar[p.name] = guess_int(
                p.name, True
            )  # `sinusoids(length, channels)`: sizes, not tensors
        else:
            tensors.append(p.name)
    names = [p.name for p in required]
    for shape in _tensor_shapes(ints):
        for token_first in (False, True):
            values = []
            for n in names:
                if n in scalar:
                    values.append(scalar[n])
                elif (token_first and n == tensors[0]) or n.lower() in _TOKEN_NAMES:
                    values.append(torch.randint(0, vocab, shape[:2]))
                else:
                    values.append(torch.randn(*shape))
            yield names, values
            if not tensors:
                return


def _tensors_in(out) -> bool:  # type: ignore[no-untyped-def]
    import torch

    if isinstance(out, torch.Tensor):
        return True
    if isinstance(out, (list, tuple)):
        return any(_tensors_in(o) for o in out)
    return False


def probe(spec: dict) -> dict:
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from kernelevo.targets.capture_child import _spec_of
    from kernelevo.task import import_file

    try:
        mod = import_file(spec["task"], "probe")
    except Exception as exc:  # the file's own module-level code: say so, not where importlib was
        text = str(exc).splitlines()[0][:300] if str(exc) else ""
        hint = (
            " (it needs a GPU at import)"
            if "driver" in text.lower() or "cuda" in text.lower()
            else ""
        )
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            hint = f" (install {exc.name.split('.')[0]} in this environment, or put its checkout on PYTHONPATH)"
        return {
            "ok": False,
            "message": f"the code the target needs failed on the CPU before any call{hint}: "
            f"{type(exc).__name__}: {text}",
        }
    model_cls = mod.Model
    deadline = time.monotonic() + float(spec.get("budget_s", 30))
    init_names, init_values = constructor_args(model_cls) if spec["kind"] == "class" else ([], [])
    torch.manual_seed(0)
    model = model_cls(*init_values)
    ints = [v for v in init_values if isinstance(v, int) and not isinstance(v, bool)]
    vocab = 128
    for v in init_values:
        if not isinstance(v, (int, float, bool, str)) and v is not None:
            fields = config_fields(v)
            ints += [x for x in fields.values() if isinstance(x, int) and not isinstance(x, bool)]
            vocab = min(
                [x for k, x in fields.items() if "vocab" in k and isinstance(x, int)] or [vocab]
            )
    fn = model.forward if spec["kind"] == "class" else getattr(mod, spec["function"])
    last, tried = "", 0
    for names, values in call_candidates(fn, False, ints, vocab):
        if time.monotonic() > deadline:
            break
        tried += 1
        try:
            with torch.no_grad():
                out = model(*values)
        except Exception as exc:  # a guess that does not fit: try the next one
            last = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            continue
        if not _tensors_in(out):
            last = f"returned {type(out).__name__}, not tensors"
            continue
        return {
            "ok": True,
            "tried": tried,
            "names": names,
            "args": [_spec_of(v, torch) for v in values],
            "init_names": init_names,
            "init": [_init_spec(v, spec, i) for i, v in enumerate(init_values)],
        }
    return {
        "ok": False,
        "tried": tried,
        "message": f"none of {tried} guessed input sets fits {spec['call']}"
        + (f" (last: {last})" if last else ""),
    }


def _init_spec(value, spec: dict, index: int) -> dict:  # type: ignore[no-untyped-def]
    import torch

    if value is None or isinstance(value, (bool, int, float, str)):
        return {"kind": "value", "repr": repr(value)}
    fields = config_fields(value)
    rebuild = "namespace" if isinstance(value, types.SimpleNamespace) else "class"
    path = spec["init_data"]
    saved = torch.load(path, weights_only=True) if os.path.exists(path) else {}
    saved[str(index)] = fields
    torch.save(saved, path)
    return {
        "kind": "config",
        "type": type(value).__name__,
        "rebuild": rebuild,
        "index": index,
        "data": os.path.basename(path),
        "fields": sorted(fields),
    }


def main(spec_path: str) -> int:
    with open(spec_path) as fh:
        spec = json.load(fh)
    try:
        result = probe(spec)
    except BaseException as exc:  # the user's code failed before any call: report it as data
        import traceback

        tb = traceback.extract_tb(exc.__traceback__)
        where = next(
            (
                f"{os.path.basename(f.filename)}:{f.lineno}"
                for f in reversed(tb)
                if not f.filename.startswith(sys.prefix) and "kernelevo" not in f.filename
            ),
            "",
        )
        text = str(exc).splitlines()[0][:300] if str(exc) else ""
        result = {
            "ok": False,
            "message": f"{where + ': ' if where else ''}{type(exc).__name__}: {text}".strip(),
        }
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
