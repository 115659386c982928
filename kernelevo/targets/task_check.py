"""Child process: run a built task once and report, as one JSON line, whether it works.

Run as `python -m kernelevo.targets.task_check TASK.py`; it imports torch and the user's
code, so it never runs inside the CLI or the language server.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

from kernelevo.targets.example_inputs import a_named

_CUDA_ONLY = (
    "load_inline",
    "SourceModule",
    "RawKernel",
    "RawModule",
    "cpp_extension.load",
    "kernelevo.cuda",
)


def _describe(out) -> list[str]:
    import torch

    if isinstance(out, torch.Tensor):
        return [f"{str(out.dtype).replace('torch.', '')}{list(out.shape)}"]
    if isinstance(out, (list, tuple)):
        return [d for o in out for d in _describe(o)]
    return [type(out).__name__]


def _not_compared(out, where: str = "output") -> str | None:
    """The first part of the outputs that is neither a tensor nor a plain value (a KV cache
    object), named by where it sits; None when every part can be compared."""
    import torch

    if out is None or isinstance(out, (torch.Tensor, bool, int, float, str)):
        return None
    if isinstance(out, (dict, list, tuple)):
        items = out.items() if isinstance(out, dict) else enumerate(out)
        found = (_not_compared(v, f"{where} {k!r}") for k, v in items)
        return next((f for f in found if f is not None), None)
    return f"{where} is {a_named(type(out).__name__)}"


def run(path: str, force_small: bool = False) -> dict:
    import torch

    cuda = torch.cuda.is_available()
    if not cuda:
        os.environ.setdefault("TRITON_INTERPRET", "1")
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    if not cuda and any(w in source for w in _CUDA_ONLY):
        return {
            "ok": None,
            "message": f"{path}: the reference compiles CUDA code; it can only be checked on a "
            "machine with a CUDA GPU (task written, not run)",
        }
    from kernelevo.checks.compare import flatten_outputs
    from kernelevo.task import load_task_module, read_task

    small = (force_small or not cuda) and "SMALL" in read_task(path).hints
    mod = load_task_module(path, size="small" if small else "default")
    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    model = mod.Model(*mod.get_init_inputs()).to(device).eval()
    args = [x.to(device) if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
    with torch.no_grad():
        out = model(*args)
    warnings = []
    if out is None:
        return {
            "ok": False,
            "message": f"{path}: forward returned None; a task's reference must return tensors",
        }
    tensors = [o for o in flatten_outputs(out) if isinstance(o, torch.Tensor)]
    if not tensors:
        what = " (a dict of outputs)" if isinstance(out, dict) else ""
        return {
            "ok": False,
            "message": f"{path}: forward returned {type(out).__name__}{what}, not tensors; "
            "a task's reference returns tensors: optimize a layer inside it, or a function of "
            "yours that returns the tensor you need",
        }
    other = _not_compared(out)
    if other is not None:
        return {
            "ok": False,
            "message": f"{path}: {other}, which the verifier cannot compare (it compares tensors "
            "and plain values); call the target so that it returns tensors (a Hugging Face model: "
            "use_cache=False in your script's call), or optimize a layer inside it",
        }
    if any(t.is_floating_point() and not torch.isfinite(t).all() for t in tensors):
        from kernelevo.judge.reference import initialized

        unset = [
            n for n, p in model.named_parameters() if p.is_floating_point() and not initialized(p)
        ]
        warnings.append(
            "output has NaN or Inf on the example inputs"
            + (
                f": weight {', '.join(unset[:3])} was never initialized (torch.empty, for the model "
                "that holds this layer to fill); the verifier draws such weights at random"
                if unset
                else ""
            )
        )
    torch.manual_seed(1)
    again = mod.get_inputs()
    firsts = [x for x in again if isinstance(x, torch.Tensor)]
    if firsts and all(
        torch.equal(x.to(device), y)
        for x, y in zip(firsts, [a for a in args if isinstance(a, torch.Tensor)], strict=False)
    ):
        warnings.append(
            "get_inputs() returns the same values for different seeds; it should draw random data"
        )
    shapes = ", ".join(
        f"{str(a.dtype).replace('torch.', '')}{list(a.shape)}"
        for a in args
        if isinstance(a, torch.Tensor)
    )
    msg = (
        f"ran on {device}{' (SMALL sizes, Triton interpreter)' if small else ''}: inputs {shapes} -> output "
        f"{', '.join(_describe(out))}"
    )
    return {
        "ok": True,
        "message": msg,
        "device": device,
        "small": small,
        "outputs": _describe(out),
        "warnings": warnings,
    }


def main(path: str, force_small: bool = False) -> int:
    try:
        result = run(path, force_small)
    except BaseException as exc:  # report any failure of user code as data
        from kernelevo.targets.gpu_only import gpu_only_here

        needs_gpu = gpu_only_here(exc)
        if needs_gpu is not None:
            result = {
                "ok": None,
                "gpu_only": needs_gpu,
                "message": f"{path}: the reference runs GPU code ({needs_gpu}); it can only be "
                "checked on a machine with a CUDA GPU (task written, not run)",
            }
            sys.stdout.write("\n" + json.dumps(result) + "\n")
            return 0
        tb = traceback.extract_tb(exc.__traceback__)
        where = next(
            (
                f"{f.filename}:{f.lineno}"
                for f in reversed(tb)
                if not f.filename.startswith(sys.prefix)
            ),
            path,
        )
        result = {"ok": False, "message": f"{where}: {type(exc).__name__}: {exc}".strip()[:2000]}
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0 if result.get("ok") is not False else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], "--small" in sys.argv[2:]))
