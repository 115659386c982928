"""Which of a candidate's ops and kernels are library work, and whether the task allows them.

Ops are grouped into families (gemm, conv, attention...) so a candidate that swaps one
library call for a sibling still counts as keeping it; profiled CUDA kernel names are
matched against vendor libraries and the candidate's own kernels. No recording here:
opwatch.py collects what ran, this module judges it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from typing import Any

from kernelevo.verdict import Check

ALLOCATION_OPS = {
    "empty",
    "empty_like",
    "empty_strided",
    "new_empty",
    "new_empty_strided",
    "zeros",
    "zeros_like",
    "new_zeros",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "new_full",
}
NEUTRAL_OPS = ALLOCATION_OPS | {  # what allocates, views or moves, and computes nothing
    "new_ones",
    "fill_",
    "zero_",
    "fill",
    "scalar_tensor",
    "view",
    "_unsafe_view",
    "reshape",
    "as_strided",
    "t",
    "transpose",
    "permute",
    "expand",
    "unsqueeze",
    "squeeze",
    "contiguous",
    "clone",
    "copy_",
    "_to_copy",
    "to",
    "detach",
    "alias",
    "lift_fresh",
    "lift_fresh_copy",
    "slice",
    "select",
    "split",
    "split_with_sizes",
    "narrow",
    "unbind",
    "view_as",
    "flatten",
    "unflatten",
    "arange",
    "_local_scalar_dense",
    "item",
    "sym_size",
    "sym_stride",
    "sym_numel",
    "sym_storage_offset",
    "is_contiguous",
    "set_",
    "resize_",
    "_reshape_alias",
    "expand_as",
    "movedim",
    "chunk",
    "unfold",
    "stride",
    "size",
    "numel",
    "dim",
    "is_same_size",
    "_has_compatible_shallow_copy_type",
    "record_stream",
    "detach_",
    "_pin_memory",
    "pin_memory",
    "resolve_conj",
    "resolve_neg",
    "_conj",
    "conj",
    "real",
    "imag",
    "view_as_real",
    "view_as_complex",
    "diagonal",
    "squeeze_",
    "unsqueeze_",
    "t_",
    "transpose_",
    "as_strided_",
}


def op_name(func: Any) -> str:
    """'aten.softmax.int' -> 'aten.softmax'."""
    name = str(func)
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else name


def is_neutral(name: str) -> bool:
    return name.split(".", 1)[-1] in NEUTRAL_OPS


OP_FAMILIES = {
    "gemm": {
        "aten.mm",
        "aten.addmm",
        "aten.bmm",
        "aten.baddbmm",
        "aten.matmul",
        "aten.linear",
        "aten._addmm_activation",
        "aten.addmv",
        "aten.mv",
        "aten.dot",
        "aten.addbmm",
        "aten.einsum",
        "aten._scaled_mm",
        "aten._int_mm",
    },
    "softmax": {
        "aten._softmax",
        "aten.softmax",
        "aten._log_softmax",
        "aten.log_softmax",
        "aten._safe_softmax",
    },
    "norm": {
        "aten.native_layer_norm",
        "aten.layer_norm",
        "aten.rms_norm",
        "aten._fused_rms_norm",
        "aten.native_group_norm",
        "aten.group_norm",
        "aten.native_batch_norm",
        "aten._native_batch_norm_legit",
        "aten._native_batch_norm_legit_no_training",
        "aten.batch_norm",
    },
    "conv": {
        "aten.convolution",
        "aten.conv2d",
        "aten.conv1d",
        "aten.conv3d",
        "aten._convolution",
        "aten.cudnn_convolution",
    },
    "attention": {
        "aten._scaled_dot_product_flash_attention",
        "aten._scaled_dot_product_efficient_attention",
        "aten.scaled_dot_product_attention",
        "aten._scaled_dot_product_cudnn_attention",
        "aten._scaled_dot_product_flash_attention_for_cpu",
    },
    "cross_entropy": {
        "aten.nll_loss_forward",
        "aten.nll_loss",
        "aten.cross_entropy_loss",
        "aten.nll_loss2d_forward",
    },
}


def _family(op: str) -> str:
    return next((name for name, ops in OP_FAMILIES.items() if op in ops), op)


_VENDOR = r"at::native|at::cuda|void at::|cublas|cutlass|xmma|cudnn|nvjet"
# vendor prefixes are library kernels even when a candidate gives its own kernel that name
VENDOR_KERNEL = re.compile(_VENDOR, re.IGNORECASE)
LIBRARY_KERNEL = re.compile(_VENDOR + r"|gemm|splitK|Memcpy|Memset", re.IGNORECASE)
GEMM_KERNEL = re.compile(r"cublas|cutlass|xmma|gemm|nvjet|splitK", re.IGNORECASE)


_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s*)?"
_GLOBAL_FN = re.compile(r"__global__\s+" + _BOUNDS + r"void\s+" + _BOUNDS + r"(\w+)")


def own_kernel_names(source: str) -> set[str]:
    """`__global__` function names written in a candidate's CUDA source strings."""
    return set(_GLOBAL_FN.findall(source))


def _is_own(profiled: str, own: AbstractSet[str]) -> bool:
    """A profiler kernel name is one of the candidate's kernels: plain (Triton, extern "C"), demangled
    ("void name<...>(...)"), or mangled ("_Z<len><name>...")."""
    bare = re.sub(r"^void\s+", "", profiled)
    return any(
        bare == n or bare.startswith((n + "(", n + "<")) or f"{len(n)}{n}" in profiled for n in own
    )


def kernel_check(
    names: list[str],
    ref_ops: set[str],
    allowed: list[str],
    own: AbstractSet[str] = frozenset(),
    strict: bool = False,
) -> Check:
    """On the GPU: a custom kernel must launch, and no library GEMM may stand in for the reference's.

    `own`: the candidate's kernel names (Triton launches, `__global__` functions in its source),
    custom whatever they are called: a Triton kernel named `gemm_epilogue_kernel` is not cuBLAS.
    """
    library = sorted(
        {
            n
            for n in names
            if VENDOR_KERNEL.search(n) or (LIBRARY_KERNEL.search(n) and not _is_own(n, own))
        }
    )
    custom = sorted({n for n in names if n not in library})
    gemm_ref = _family_of_any(ref_ops, "gemm") and "gemm" not in policy_families(allowed, strict)
    gemm_used = [n for n in library if GEMM_KERNEL.search(n)]
    detail = {"custom_kernels": custom[:20], "library_kernels": library[:20]}
    if gemm_ref and gemm_used:
        return Check(
            "gpu_kernels",
            False,
            f"a library GEMM kernel ran inside the candidate ({gemm_used[0][:80]}); "
            "the task's matrix product must be computed by your kernel",
            detail,
        )
    if not custom:
        return Check(
            "gpu_kernels",
            False,
            "no custom GPU kernel ran: every kernel launched was a library kernel",
            detail,
        )
    return Check(
        "gpu_kernels", True, f"custom kernels: {', '.join(c[:40] for c in custom[:5])}", detail
    )


def needs_profile(backend: str | None, ref_ops: set[str]) -> bool:
    """The profiler (seconds to start) runs where the dispatcher cannot see everything: a C++
    extension's own kernels, and library GEMM/conv/attention kernels launched behind it."""
    return backend == "cuda_inline" or any(
        _family(op) in ("gemm", "conv", "attention") for op in ref_ops
    )


def _family_of_any(ops: set[str], family: str) -> bool:
    return any(_family(op) == family for op in ops)


# The vendor library whose handle a family's first call makes in a fresh process.
_FAMILY_LIBRARY = {"gemm": "cublas", "conv": "cudnn"}


def libraries_called(ops: Iterable[str]) -> list[str]:
    """The vendor libraries (cuBLAS, cuDNN) a candidate's ops called: the runner host's next spare
    process makes their handles while it waits, not inside the next verdict's first run."""
    return sorted({_FAMILY_LIBRARY[f] for f in map(_family, ops) if f in _FAMILY_LIBRARY})


# What a candidate may leave to vendor libraries by default: the matrix products, convolutions and
# attention that cuBLAS, cuDNN and flash kernels do near peak (KernelBench accepts them too).
LIBRARY_FAMILIES = ("gemm", "conv", "attention")
_LIBRARY_PHRASE = {
    "gemm": "the cuBLAS matrix product",
    "conv": "the cuDNN convolution",
    "attention": "the library attention kernel",
}
_OP_PHRASE = {
    "relu": "ReLU",
    "gelu": "GELU",
    "add": "bias",
    "mul": "scaling",
    "div": "division",
    "sub": "subtraction",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "hardtanh": "hardtanh",
    "clamp": "clamp",
    "silu": "SiLU",
    "leaky_relu": "LeakyReLU",
    "mean": "mean",
    "sum": "sum",
    "amax": "max",
    "max": "max",
    "softmax": "softmax",
    "norm": "normalisation",
    "max_pool2d_with_indices": "max-pooling",
    "avg_pool2d": "average pooling",
    "mish": "Mish",
    "softplus": "softplus",
    "exp": "exp",
    "log": "log",
}


def policy_families(allowed: list[str], strict: bool) -> set[str]:
    """Op families a candidate may dispatch although the reference uses them."""
    return {_family(op) for op in allowed} | (set() if strict else set(LIBRARY_FAMILIES))


def _phrase(op: str) -> str:
    fam = _family(op)
    if fam in ("softmax", "norm"):
        return _OP_PHRASE[fam]
    short = op.split(".", 1)[-1].strip("_")
    return _OP_PHRASE.get(short, short.replace("_", " "))


def describe_split(kept: list[str], replaced: list[str], kernels: int, backend: str) -> str:
    """'keeps the cuDNN convolution; bias, ReLU and scaling fused in one Triton kernel'."""
    libs = sorted({_LIBRARY_PHRASE.get(_family(op), op) for op in kept})
    done = list(dict.fromkeys(_phrase(op) for op in replaced))
    lang = {"triton": "Triton", "cuda": "CUDA", "cuda_inline": "CUDA"}.get(backend, backend)
    what = (
        ", ".join(done[:-1]) + (" and " if len(done) > 1 else "") + done[-1] if done else "the rest"
    )
    how = (
        f"fused in one {lang} kernel"
        if kernels == 1
        else f"in {kernels} {lang} kernels"
        if kernels > 1
        else f"in {lang} kernels"
    )
    return f"keeps {' and '.join(libs)}; {what} {how}"


def library_op_check(
    ref_ops: set[str], cand_ops: dict[str, int], allowed: list[str], strict: bool = False
) -> Check:
    """The library-op policy: the reference's own compute ops are refused (matched by family: mm for
    addmm, _softmax for softmax), except GEMM, convolution and attention, which a candidate may keep
    when its own kernels replace at least one other op of the reference. `strict` (a benchmark's
    rule) refuses every library GEMM, convolution and attention, and the reference's ops."""
    used = sorted(n for n in cand_ops if not is_neutral(n))
    ref_families = {_family(op) for op in ref_ops}
    keepable = policy_families(allowed, strict)
    banned = sorted(
        n
        for n in used
        if (_family(n) in ref_families or (strict and _family(n) in LIBRARY_FAMILIES))
        and _family(n) not in keepable
    )
    kept = sorted(
        n
        for n in used
        if _family(n) in keepable and _family(n) in (ref_families | set(LIBRARY_FAMILIES))
    )
    replaced = sorted(op for op in ref_ops if _family(op) not in {_family(n) for n in used})
    detail = {
        "used": used,
        "reference_ops": sorted(ref_ops),
        "banned": banned,
        "kept": kept,
        "replaced": replaced,
        "policy": "strict" if strict else "library GEMM/convolution/attention allowed",
    }
    if banned:
        why = (
            "this task is strict: every op must be computed by your kernels"
            if strict and any(_family(n) in LIBRARY_FAMILIES for n in banned)
            else "compute them in your kernel"
        )
        return Check(
            "library_ops",
            False,
            f"the candidate calls the reference op(s) {', '.join(banned)} itself; {why}",
            detail,
        )
    if kept and not replaced:
        return Check(
            "library_ops",
            False,
            f"the candidate leaves the whole reference to library calls ({', '.join(kept)}); keeping "
            "cuBLAS/cuDNN is allowed only beside your own kernels doing at least one of the reference's "
            "other ops",
            detail,
        )
    return Check(
        "library_ops",
        True,
        f"library ops kept: {', '.join(kept)}"
        if kept
        else f"library ops used: {', '.join(used) or 'none'}",
        detail,
    )
