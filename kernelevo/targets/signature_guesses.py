"""Argument values guessed from a signature alone: integers by their parameter names (heads,
layers, vocabulary, context), scalars by their hints, config objects filled with small sizes,
and a class's constructor arguments from all of those.

The guesses are small on purpose (a CPU runs them); probe_child.py tries them on the target
and keeps the first call that runs.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing

from kernelevo.targets.capture_child import config_data, is_plain_data

SIZE = 64  # hidden sizes, channels, embedding widths


_NAMED_INTS = (
    (("image_size", "img_size", "resolution"), 32),
    (("patch",), 8),  # a side that divides the image's
    (("frames",), 16),  # a video's, which its frame patches divide
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


TOKEN_NAMES = (
    "idx",
    "ids",
    "input_ids",
    "tokens",
    "token_ids",
    "indices",
    "position_ids",
)
# a loss's second argument: class indices over the first's last dimension (cross-entropy), or
# values of the first's shape (KL divergence, MSE); tried in that order
LABEL_NAMES = ("target", "targets", "label", "labels", "shift_labels")


# (x, table) for rotary embeddings (cos/sin or freqs tables), by convention: x as (B, T, H, D) or
# (B, H, T, D); tables half or full width, (T, D) or broadcast as (1, T, 1, D) (nanochat) or
# (B, T, D) (transformers), or cos and sin stacked last (T, D/2, 2) (gpt-fast's freqs_cis)
ROTARY_SHAPES = [
    (x, table)
    for x in ((2, 16, 4, 64), (2, 4, 16, 64))
    for table in (
        (1, 16, 1, 32),
        (16, 32),
        (1, 16, 1, 64),
        (16, 64),
        (2, 16, 64),
        (2, 16, 32),
        (16, 32, 2),
    )
]


SIZE_NAME = re.compile(
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
    return SIZE


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
    data = config_data(obj)
    if dataclasses.is_dataclass(obj):
        return data
    return {k: v for k, v in data.items() if is_plain_data(v)}


def type_hints(fn) -> dict:  # type: ignore[no-untyped-def]
    try:
        return typing.get_type_hints(fn)
    except Exception:  # hints naming things the file imports only for type checking
        return {}


def unoptional(hint):  # type: ignore[no-untyped-def]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if len(args) == 1 and type(None) in typing.get_args(hint) else hint


def int_tuple_arity(hint) -> int | None:  # type: ignore[no-untyped-def]
    """`Tuple[int, int]` -> 2, `tuple[int, ...]` -> 2 (a size pair, SAM's `q_size`), else None."""
    if typing.get_origin(hint) is not tuple:
        return None
    args = typing.get_args(hint)
    if args and all(a is int for a in args):
        return len(args)
    if len(args) == 2 and args[0] is int and args[1] is Ellipsis:
        return 2
    return None


def constructor_args(cls: type) -> tuple[list[str], list, list[str]]:
    """Guessed arguments for `cls(...)`: its required parameters, by their hints and names, then
    the names of those it takes by keyword only (the last of the arguments, in order)."""
    init = getattr(cls, "__init__")  # noqa: B009 (the class's own, which mypy will not read off a type)
    sig = inspect.signature(init)
    hints = type_hints(init)
    names, values, by_name = [], [], []
    for p in list(sig.parameters.values())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is not p.empty:
            continue
        if p.kind is p.KEYWORD_ONLY:
            by_name.append(p.name)
        hint = unoptional(hints.get(p.name))
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
    return names, values, by_name
