"""Watching what a candidate really does: library ops it dispatches and kernels it launches.

A TorchDispatchMode sees every aten op, including those called from inside a C++
extension; Triton launches are counted by wrapping the launcher (and hidden from the
op recorder, since the interpreter itself uses torch ops on CPU).
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from kernelevo.verdict import Check

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


OP_FAMILIES = {
    "gemm": {"aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.matmul", "aten.linear", "aten._addmm_activation",
             "aten.addmv", "aten.mv", "aten.dot", "aten.addbmm", "aten.einsum", "aten._scaled_mm", "aten._int_mm"},
    "softmax": {"aten._softmax", "aten.softmax", "aten._log_softmax", "aten.log_softmax", "aten._safe_softmax"},
    "norm": {"aten.native_layer_norm", "aten.layer_norm", "aten.rms_norm", "aten._fused_rms_norm",
             "aten.native_group_norm", "aten.group_norm", "aten.native_batch_norm", "aten._native_batch_norm_legit",
             "aten._native_batch_norm_legit_no_training", "aten.batch_norm"},
    "conv": {"aten.convolution", "aten.conv2d", "aten.conv1d", "aten.conv3d", "aten._convolution", "aten.cudnn_convolution"},
    "attention": {"aten._scaled_dot_product_flash_attention", "aten._scaled_dot_product_efficient_attention",
                  "aten.scaled_dot_product_attention", "aten._scaled_dot_product_cudnn_attention"},
    "cross_entropy": {"aten.nll_loss_forward", "aten.nll_loss", "aten.cross_entropy_loss", "aten.nll_loss2d_forward"},
}


def _family(op: str) -> str:
    return next((name for name, ops in OP_FAMILIES.items() if op in ops), op)


_VENDOR = r"at::native|at::cuda|void at::|cublas|cutlass|xmma|cudnn|nvjet"
# vendor prefixes are library kernels even when a candidate gives its own kernel that name
VENDOR_KERNEL = re.compile(_VENDOR, re.IGNORECASE)
LIBRARY_KERNEL = re.compile(_VENDOR + r"|gemm|splitK|Memcpy|Memset", re.IGNORECASE)
GEMM_KERNEL = re.compile(r"cublas|cutlass|xmma|gemm|nvjet|splitK", re.IGNORECASE)


def profile_kernels(run: Callable[[], Any]) -> list[str]:
    """Names of the CUDA kernels one forward launches (the profiler sees past C++ extensions)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s*)?"
_GLOBAL_FN = re.compile(r"__global__\s+" + _BOUNDS + r"void\s+" + _BOUNDS + r"(\w+)")


def own_kernel_names(source: str) -> set[str]:
    """`__global__` function names written in a candidate's CUDA source strings."""
    return set(_GLOBAL_FN.findall(source))


def _is_own(profiled: str, own: set[str]) -> bool:
    """A profiler kernel name is one of the candidate's kernels: plain (Triton, extern "C"), demangled
    ("void name<...>(...)"), or mangled ("_Z<len><name>...")."""
    bare = re.sub(r"^void\s+", "", profiled)
    return any(bare == n or bare.startswith((n + "(", n + "<")) or f"{len(n)}{n}" in profiled for n in own)


def kernel_check(names: list[str], ref_ops: set[str], allowed: list[str], own: set[str] = frozenset()) -> Check:
    """On the GPU: a custom kernel must launch, and no library GEMM may stand in for the reference's.

    `own`: the candidate's kernel names (Triton launches, `__global__` functions in its source),
    custom whatever they are called: a Triton kernel named `gemm_epilogue_kernel` is not cuBLAS.
    """
    library = sorted({n for n in names if VENDOR_KERNEL.search(n) or (LIBRARY_KERNEL.search(n) and not _is_own(n, own))})
    custom = sorted({n for n in names if n not in library})
    gemm_ref = _family_of_any(ref_ops, "gemm") and "gemm" not in {_family(a) for a in allowed}
    gemm_used = [n for n in library if GEMM_KERNEL.search(n)]
    detail = {"custom_kernels": custom[:20], "library_kernels": library[:20]}
    if gemm_ref and gemm_used:
        return Check("gpu_kernels", False, f"a library GEMM kernel ran inside the candidate ({gemm_used[0][:80]}); "
                     "the task's matrix product must be computed by your kernel", detail)
    if not custom:
        return Check("gpu_kernels", False, "no custom GPU kernel ran: every kernel launched was a library kernel", detail)
    return Check("gpu_kernels", True, f"custom kernels: {', '.join(c[:40] for c in custom[:5])}", detail)


def needs_profile(backend: str | None, ref_ops: set[str]) -> bool:
    """The profiler (seconds to start) runs where the dispatcher cannot see everything: a C++
    extension's own kernels, and library GEMM/conv/attention kernels launched behind it."""
    return backend == "cuda_inline" or any(_family(op) in ("gemm", "conv", "attention") for op in ref_ops)


def _family_of_any(ops: set[str], family: str) -> bool:
    return any(_family(op) == family for op in ops)


def library_op_check(ref_ops: set[str], cand_ops: dict[str, int], allowed: list[str]) -> Check:
    """Reject the reference's own compute ops, matched by family (mm for addmm, _softmax for softmax)."""
    used = sorted(n for n in cand_ops if not is_neutral(n))
    ref_families = {_family(op) for op in ref_ops}
    allowed_families = {_family(op) for op in allowed}
    banned = sorted(n for n in used if _family(n) in ref_families and _family(n) not in allowed_families)
    if banned:
        return Check("library_ops", False,
                     f"the candidate calls the reference op(s) {', '.join(banned)} itself; compute them in your kernel",
                     {"used": used, "reference_ops": sorted(ref_ops), "banned": banned})
    return Check("library_ops", True, f"library ops used: {', '.join(used) or 'none'}",
                 {"used": used, "reference_ops": sorted(ref_ops)})
