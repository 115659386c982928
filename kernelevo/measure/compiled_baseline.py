"""The torch.compile baseline: what a user gets for one line, measured beside eager.

torch.compile is lazy: building the wrapper rarely fails, the first call compiles (seconds to
minutes with max-autotune) and is where errors appear. Callers run `first_call` under their
own time limit and skip the baseline when it fails; a missing baseline is reported, not fatal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

MODES = ("default", "max-autotune", "max-autotune-no-cudagraphs", "reduce-overhead")


def compile_baseline(
    model: Callable[..., Any], mode: str = "default", *, backend: str = "inductor"
) -> tuple[Callable[..., Any] | None, str | None]:
    """(compiled callable, None) or (None, why not). `backend` other than inductor is for tests."""
    if mode not in MODES:
        return None, f"unknown torch.compile mode {mode!r}; expected one of {', '.join(MODES)}"
    try:
        from torch._dynamo import is_dynamo_supported

        if not is_dynamo_supported():
            return None, "torch.compile is not supported on this Python/platform"
        kwargs: dict[str, Any] = {"backend": backend}
        if backend == "inductor":
            kwargs["mode"] = mode
        return torch.compile(model, **kwargs), None
    except Exception as e:
        return None, _one_line(e)


def first_call(fn: Callable[..., Any], inputs: Sequence[Any]) -> tuple[Any, str | None, float]:
    """Run the first (compiling) call: (output or None, error or None, seconds taken)."""
    t0 = time.perf_counter()
    try:
        with torch.no_grad():
            out = fn(*inputs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return out, None, time.perf_counter() - t0
    except Exception as e:
        return None, _one_line(e), time.perf_counter() - t0


def _one_line(e: BaseException) -> str:
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {first}"[:2000]
