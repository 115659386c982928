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


CONVOLUTION_OPS = frozenset(
    {
        "aten.convolution",
        "aten._convolution",
        "aten.cudnn_convolution",
        "aten.cudnn_convolution_transpose",
    }
)
CUDNN_BACKENDS = ("Cudnn", "CudnnTranspose")


def cudnn_conv_tf32() -> bool:
    """Whether cuDNN may run float32 convolutions in TF32 now: PyTorch's default
    (`torch.backends.cudnn.allow_tf32 = True`), unlike its matrix products."""
    cudnn = torch.backends.cudnn
    if not cudnn.enabled:
        return False
    level = getattr(getattr(cudnn, "conv", None), "fp32_precision", None)
    if level in ("tf32", "ieee"):
        return level == "tf32"
    try:
        return bool(cudnn.allow_tf32)
    except RuntimeError:  # the legacy flag refuses reads once the new API was used
        return False


def convolution_runs_tf32(op: str, args: tuple[object, ...]) -> bool:
    """Whether the dispatched aten op `op` is a float32 CUDA convolution that cuDNN runs in TF32:
    such a reference meets only TF32 bounds itself, so a candidate is held to those."""
    if op not in CONVOLUTION_OPS or len(args) < 9:
        return False
    x = args[0]
    if not (isinstance(x, torch.Tensor) and x.is_cuda and x.dtype == torch.float32):
        return False
    if not cudnn_conv_tf32():
        return False
    if op.startswith("aten.cudnn"):
        return True
    try:  # depthwise and some 3-D shapes go to PyTorch's own fp32 kernels, not cuDNN
        backend = torch._C._select_conv_backend(*args[:9], None)  # type: ignore[attr-defined]
    except (RuntimeError, TypeError, AttributeError):
        return True
    return getattr(backend, "name", "") in CUDNN_BACKENDS
