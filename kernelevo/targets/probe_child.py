"""Child process: find example inputs for a target from its signature alone, by trying them.

Run as `python -m kernelevo.targets.probe_child SPEC.json`. It imports a draft of the task
(the user's code with placeholder getters), builds the constructor's arguments from type
hints, defaults, config classes and parameter names at small sizes, then calls the target
with guessed tensors until one call runs. Config objects are written as data (torch.save of
their fields) so that any config class works, not only ones we could write as source.
Prints one JSON line: the capture (same shape as capture_child's) or why nothing fitted.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import time
import types

from kernelevo.targets.capture_defaults import python_original
from kernelevo.targets.docstring_shapes import documented_shapes
from kernelevo.targets.gpu_only import gpu_only_at
from kernelevo.targets.signature_guesses import (
    LABEL_NAMES,
    ROTARY_SHAPES,
    SIZE,
    SIZE_NAME,
    TOKEN_NAMES,
    config_fields,
    constructor_args,
    guess_int,
    guess_scalar,
    int_tuple_arity,
    type_hints,
    unoptional,
)


def _tensor_shapes(ints: list[int]) -> list[tuple[int, ...]]:
    dims = list(dict.fromkeys([v for v in ints if 1 < v <= 512] + [SIZE]))
    shapes: list[tuple[int, ...]] = []
    for d in dims:
        shapes += [(2, 8, d), (2, d), (2, 4, 8, d), (8, d)]
    for a in dims:
        for b in dims:
            if a != b:
                shapes += [(2, a, b), (2, a, 2 * b)]
    shapes += [(2, 16, 8, 8), (2, SIZE, 8, 8), (SIZE,), (2, 8)]
    return list(dict.fromkeys(shapes))


def call_candidates(
    fn, skip_self: bool, ints: list[int], vocab: int, doc: str = "", first_shapes=()
):  # type: ignore[no-untyped-def]
    """(names, values, where the shapes came from) to try, most likely first."""
    import torch

    original = python_original(fn)
    sig, hints = inspect.signature(original), type_hints(original)
    params = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if skip_self and params:
        params = params[1:]
    required = [p for p in params if p.default is p.empty]
    scalar: dict[str, object] = {}
    tensors: list[str] = []
    documented = documented_shapes(doc, [p.name for p in required], ints)
    for p in required:
        hint = unoptional(hints.get(p.name))
        arity = int_tuple_arity(hint)
        if hint in (int, float, bool):
            scalar[p.name] = guess_scalar(p.name, hint, False)
        elif arity is not None:  # a size pair: as documented (`(q_h, q_w)`), else 8s
            scalar[p.name] = documented.get(p.name) or (8,) * arity
        elif p.name in ("n_rep", "repeats", "groups", "num_groups") or hint is str:
            scalar[p.name] = guess_int(p.name, False) if hint is not str else "none"
        elif hint is None and SIZE_NAME.search(p.name.lower()):
            scalar[p.name] = guess_int(
                p.name, True
            )  # `sinusoids(length, channels)`: sizes, not tensors
        else:
            tensors.append(p.name)
    names = [p.name for p in required]
    if tensors and all(n in documented for n in tensors):  # what the code says first

        def said(n: str):  # type: ignore[no-untyped-def]
            shape = documented[n]
            return (
                torch.randint(0, vocab, shape) if n.lower() in TOKEN_NAMES else torch.randn(*shape)
            )

        yield names, _filled(names, scalar, said), "docstring"
    tables = [n for n in tensors if n.lower().startswith(("cos", "sin", "freqs"))]
    if tables and len(tables) < len(tensors):  # rotary embeddings: x and its tables
        for x_shape, table in ROTARY_SHAPES:
            values = _filled(
                names, scalar, lambda n, t=table, x=x_shape: torch.randn(*(t if n in tables else x))
            )
            yield names, values, "rotary"
    labels = [n for n in tensors if n.lower() in LABEL_NAMES]
    # every shape as floats first (labels as class indices, then as values), then with the first
    # tensor as token ids: a fit of the plain reading wins over a stranger one at an earlier shape
    passes = [("classes", False)] if labels else []
    passes += [("values", False), ("values", True)] if tensors else [("values", False)]
    for labels_as, token_first in passes:
        for shape in [*first_shapes, *_tensor_shapes(ints)]:

            def drawn(n: str, shape=shape, labels_as=labels_as, token_first=token_first):  # type: ignore[no-untyped-def]
                if n in labels and labels_as == "classes":
                    return torch.randint(0, shape[-1], shape[:-1])
                if n not in labels and (
                    (token_first and n == tensors[0]) or n.lower() in TOKEN_NAMES
                ):
                    return torch.randint(0, vocab, shape[:2])
                return torch.randn(*shape)

            yield names, _filled(names, scalar, drawn), ""
            if not tensors:
                return


def _filled(names: list[str], scalar: dict[str, object], tensor) -> list[object]:  # type: ignore[no-untyped-def]
    """One call's arguments: the scalars chosen, a tensor drawn for every other name."""
    return [scalar[n] if n in scalar else tensor(n) for n in names]


def _sizes_of(model) -> list[int]:  # type: ignore[no-untyped-def]
    """The sizes of the module's own weights and buffers, the likeliest sizes of its inputs: a
    `scale` of (256,) or a Linear's (512, 256) where the constructor's defaults chose them."""
    sizes: list[int] = []
    for t in [*model.parameters(), *model.buffers()]:
        sizes += [int(d) for d in t.shape]
    return list(dict.fromkeys(sizes))


def _image_shapes(model) -> list[tuple[int, ...]]:  # type: ignore[no-untyped-def]
    """Inputs for the module's first convolution: its own channels (3 for RGB, where a generic
    guess has 16 or 64), a batch of 2 and 32 (or twice the kernel) per spatial side."""
    import torch

    for m in model.modules():
        if isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)):
            k = m.kernel_size if isinstance(m.kernel_size, tuple) else (m.kernel_size,)
            side = max(32, 2 * max(k))
            return [(2, m.in_channels, *([side] * len(k)))]
    return []


_IMAGE_SIDE = ("image_size", "img_size", "resolution", "input_size")
_CHANNELS = ("channels", "in_chans", "num_channels")


def _init_images(names: list[str], values: list) -> list[tuple[int, ...]]:  # type: ignore[type-arg]
    """Images as the constructor describes them (`image_size`, `channels`): a ViT that cuts its
    patches with einops or unfold has no convolution to read their shape from."""
    ints = {n.lower(): v for n, v in zip(names, values, strict=False) if type(v) is int}
    side = next((v for n, v in ints.items() if any(k in n for k in _IMAGE_SIDE)), None)
    if side is None:
        return []
    channels = next((v for n, v in ints.items() if n.endswith(_CHANNELS)), 3)
    frames = next((v for n, v in ints.items() if n.endswith("frames")), None)
    if frames is not None:  # a video: (B, C, frames, H, W), as vit-pytorch's 3D models take it
        return [(2, channels, frames, side, side), (2, channels, side, side)]
    return [(2, channels, side, side)]


def _ranks(out) -> list[int]:  # type: ignore[no-untyped-def]
    """The rank of each tensor in outputs, opened as the verifier opens them (a ModelOutput too)."""
    import torch

    from kernelevo.checks.compare import flatten_outputs

    return [o.dim() for o in flatten_outputs(out) if isinstance(o, torch.Tensor)]


def probe(spec: dict) -> dict:
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from kernelevo.task import import_file

    try:
        mod = import_file(spec["task"], "probe")
    except Exception as exc:  # the file's own module-level code: say so, not where importlib was
        text = str(exc).splitlines()[0][:300] if str(exc) else ""
        hint = " (it needs a GPU at import)" if gpu_only_at(exc) else ""
        missing = (
            exc.name.split(".")[0] if isinstance(exc, ModuleNotFoundError) and exc.name else ""
        )
        if missing:
            hint = f" (install {missing} in this environment, or put its checkout on PYTHONPATH)"
        return {
            "ok": False,
            "message": f"the code the target needs failed on the CPU before any call{hint}: "
            f"{type(exc).__name__}: {text}",
            **(
                {
                    "missing": missing,
                    "error": f"{type(exc).__name__}: {text}",
                }
                if missing
                else {}
            ),
        }
    model_cls = mod.Model
    deadline = time.monotonic() + float(spec.get("budget_s", 30))
    init_names, init_values, by_name = (
        constructor_args(model_cls) if spec["kind"] == "class" else ([], [], [])
    )
    torch.manual_seed(0)
    n = len(init_values) - len(by_name)
    model = model_cls(*init_values[:n], **dict(zip(by_name, init_values[n:], strict=True)))
    ints = [v for v in init_values if isinstance(v, int) and not isinstance(v, bool)]
    vocab = 128
    for v in init_values:
        if not isinstance(v, (int, float, bool, str)) and v is not None:
            fields = config_fields(v)
            ints += [x for x in fields.values() if isinstance(x, int) and not isinstance(x, bool)]
            vocab = min(
                [x for k, x in fields.items() if "vocab" in k and isinstance(x, int)] or [vocab]
            )
    if isinstance(model, torch.nn.Module):
        ints += _sizes_of(model)
    fn = model.forward if spec["kind"] == "class" else getattr(mod, spec["function"])
    last, tried = "", 0
    stopped_at_gpu: tuple[list[str], list, str, str] | None = None
    doc = (inspect.getdoc(python_original(fn)) or "") + "\n" + (inspect.getdoc(type(model)) or "")
    images = _init_images(init_names, init_values)
    images += _image_shapes(model) if isinstance(model, torch.nn.Module) else []
    for names, values, shapes_from in call_candidates(fn, False, ints, vocab, doc, images):
        if time.monotonic() > deadline:
            break
        tried += 1
        try:
            with torch.no_grad():
                out = model(*values)
        except Exception as exc:  # a guess that does not fit: try the next one
            last = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            where = gpu_only_at(exc)
            if where is not None and stopped_at_gpu is None:
                stopped_at_gpu = (names, values, where, shapes_from)
            continue
        if not _ranks(out):
            last = f"returned {type(out).__name__}, not tensors"
            continue
        inputs_rank = max((r for v in values for r in _ranks(v)), default=0)
        if shapes_from == "rotary" and max(_ranks(out)) > inputs_rank:
            last = "the tables broadcast the output to a higher rank than its inputs"
            continue  # a table of another convention, not the one the code was written for
        return {
            **_capture(tried, names, values, init_names, init_values, spec),
            "init_keywords": by_name,
            "shapes_from": shapes_from,
        }
    if stopped_at_gpu is not None:  # passed the code's own checks up to its GPU call
        names, values, where, shapes_from = stopped_at_gpu
        found = _capture(tried, names, values, init_names, init_values, spec)
        return {**found, "init_keywords": by_name, "gpu_only": where, "shapes_from": shapes_from}
    return {
        "ok": False,
        "tried": tried,
        "message": f"none of {tried} guessed input sets fits {spec['call']}"
        + (f" (last: {last})" if last else ""),
    }


def _capture(tried, names, values, init_names, init_values, spec: dict) -> dict:  # type: ignore[no-untyped-def]
    import torch

    from kernelevo.targets.capture_child import _spec_of

    return {
        "ok": True,
        "tried": tried,
        "names": names,
        "args": [_spec_of(v, torch) for v in values],
        "init_names": init_names,
        "init": [_init_spec(v, spec, i) for i, v in enumerate(init_values)],
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
