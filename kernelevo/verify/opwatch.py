"""Watching what a candidate really does: library ops it dispatches and kernels it launches.

A TorchDispatchMode sees every aten op, including those called from inside a C++
extension; Triton launches are counted by wrapping the launcher (and hidden from the
op recorder, since the interpreter itself uses torch ops on CPU).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

NEUTRAL_OPS = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
    "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "fill_", "zero_", "fill", "scalar_tensor",
    "view", "_unsafe_view", "reshape", "as_strided", "t", "transpose", "permute", "expand", "unsqueeze", "squeeze",
    "contiguous", "clone", "copy_", "_to_copy", "to", "detach", "alias", "lift_fresh", "lift_fresh_copy", "slice",
    "select", "split", "split_with_sizes", "narrow", "unbind", "view_as", "flatten", "unflatten", "arange",
    "_local_scalar_dense", "item", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous",
    "set_", "resize_", "_reshape_alias", "expand_as", "movedim", "chunk", "unfold", "stride", "size", "numel",
    "dim", "is_same_size", "_has_compatible_shallow_copy_type", "record_stream", "detach_", "_pin_memory", "pin_memory",
    "resolve_conj", "resolve_neg", "_conj", "conj", "real", "imag", "view_as_real", "view_as_complex", "diagonal",
    "squeeze_", "unsqueeze_", "t_", "transpose_", "as_strided_",
}


def op_name(func: Any) -> str:
    """'aten.softmax.int' -> 'aten.softmax'."""
    name = str(func)
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else name


def is_neutral(name: str) -> bool:
    return name.split(".", 1)[-1] in NEUTRAL_OPS


class OpRecorder(TorchDispatchMode):
    """Records aten op names (without overloads) dispatched while active."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        name = op_name(func)
        self.ops[name] = self.ops.get(name, 0) + 1
        return func(*args, **(kwargs or {}))

    def compute_ops(self) -> set[str]:
        return {n for n in self.ops if not is_neutral(n)}


@dataclass
class LaunchLog:
    count: int = 0
    kernels: dict[str, int] = field(default_factory=dict)
    signatures: dict[str, dict[str, Any]] = field(default_factory=dict)


LAUNCHES = LaunchLog()


def _describe(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return {"tensor": str(value.dtype).replace("torch.", "")}
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        return {"float": value}
    if value is None:
        return {"none": True}
    return {"other": type(value).__name__}


def _wrap_run(original: Callable[..., Any]) -> Callable[..., Any]:
    def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> Any:
        if not warmup:
            fn = getattr(self, "fn", None)
            name = getattr(fn, "__name__", "kernel")
            LAUNCHES.count += 1
            LAUNCHES.kernels[name] = LAUNCHES.kernels.get(name, 0) + 1
            if name not in LAUNCHES.signatures and fn is not None:
                try:
                    bound = inspect.signature(fn).bind_partial(*args, **{k: v for k, v in kwargs.items()
                                                                         if k in inspect.signature(fn).parameters})
                    LAUNCHES.signatures[name] = {
                        "args": {k: _describe(v) for k, v in bound.arguments.items()},
                        "options": {k: v for k, v in kwargs.items() if k in ("num_warps", "num_stages", "num_ctas")},
                    }
                except TypeError:
                    pass
        with _disable_current_modes():
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    run.__kernelevo_wrapped__ = True  # type: ignore[attr-defined]
    return run


def install_launch_counters() -> None:
    """Wrap Triton's launchers (compiled and interpreted) once per process."""
    from triton.runtime.jit import JITFunction

    classes = [JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except ImportError:
        pass
    for cls in classes:
        if not getattr(cls.run, "__kernelevo_wrapped__", False):
            cls.run = _wrap_run(cls.run)


def total_launches() -> int:
    """Triton launches plus the CUDA fast path's launches."""
    n = LAUNCHES.count
    try:
        from kernelevo import cuda as kcuda

        n += int(kcuda.launch_count())
    except (ImportError, AttributeError):
        pass
    return n
