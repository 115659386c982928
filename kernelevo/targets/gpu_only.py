"""Does this error mean "the code needs a GPU", and where in the user's code was it asked for?

The user's code is run on the CPU to learn its inputs (probe_child.py) and to check a built
task where there is no GPU (task_check.py). Code that launches Triton kernels on CUDA tensors,
enters `torch.cuda.device(...)` or allocates on "cuda" fails there for that reason alone: a
guess of inputs that got that far passed the code's own checks, and a task that fails so is
written but can only be checked on a GPU. Told apart by where the error was raised (inside
torch.cuda, Triton's GPU driver or Triton's CPU interpreter, which stands in for a GPU and
cannot run every kernel) or by the runtime's own words for a missing GPU.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

_OURS = str(Path(__file__).resolve().parents[1]) + "/"

# Triton's interpreter is the CPU's stand-in for the GPU: a kernel it cannot run (scalar
# arguments it does not convert, ops it lacks) was reached, and needs the real thing
_GPU_FRAMES = (
    "/torch/cuda/",
    "/triton/backends/",
    "/triton/runtime/driver",
    "/triton/runtime/interpreter",
)
_GPU_WORDS = (
    "not compiled with CUDA",
    "cpu tensor?",
    "active drivers",
    "no CUDA GPUs",
    "Found no NVIDIA driver",
    "CUDA driver",
)


def gpu_only_at(exc: BaseException) -> str | None:
    """'in FUNCTION: `LINE` (Error: message)' for the user's line that asked for the GPU, when
    `exc` means the code needs one; None for any other failure."""
    frames = traceback.extract_tb(exc.__traceback__)
    text = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
    inside = any(any(part in f.filename for part in _GPU_FRAMES) for f in frames)
    if not inside and not any(word in text for word in _GPU_WORDS):
        return None
    mine = [f for f in frames if not _library(f.filename)]
    error = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if not mine:
        return f"({error})"
    f = mine[-1]
    return f"in {f.name}: `{(f.line or '').strip()}` ({error})"


def _library(filename: str) -> bool:
    return (
        filename.startswith((sys.prefix, sys.base_prefix))
        or "site-packages" in filename
        or filename.startswith(_OURS)
        or filename.startswith("<")
    )


def gpu_only_here(exc: BaseException) -> str | None:
    """`gpu_only_at`, on a machine without a CUDA GPU only: with one, the same error has another
    cause. For the child processes that run the user's code (they have torch imported)."""
    import torch

    return None if torch.cuda.is_available() else gpu_only_at(exc)
