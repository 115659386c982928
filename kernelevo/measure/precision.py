"""float32 matrix-product precision, set for a block and restored after.

A task that declares `ALLOW_TF32 = True` accepts TF32 products; its eager and torch.compile
baselines then run with TF32 too, so a candidate's speedup comes from the kernel and not from
a precision the user could have switched on with one line. Peak measurements run without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def fp32_matmul(tf32: bool) -> Iterator[None]:
    """Uses the `fp32_precision` API where torch has it: mixing it with the legacy
    `allow_tf32` flag makes torch raise on later reads."""
    m = torch.backends.cuda.matmul
    attr, value = (
        ("fp32_precision", "tf32" if tf32 else "ieee")
        if hasattr(m, "fp32_precision")
        else ("allow_tf32", tf32)
    )
    old = getattr(m, attr)
    setattr(m, attr, value)
    try:
        yield
    finally:
        setattr(m, attr, old)


def task_allows_tf32(task: object) -> bool:
    return bool(getattr(task, "ALLOW_TF32", False))
