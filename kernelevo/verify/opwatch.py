"""Watching what a candidate really does: library ops it dispatches and kernels it launches.

A TorchDispatchMode sees every aten op, including those called from inside a C++
extension; Triton launches are counted by wrapping the launcher (and hidden from the
op recorder, since the interpreter itself uses torch ops on CPU).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from kernelevo.verdict import Check

NEUTRAL_OPS = {
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
    "new_ones",
    "full",
    "full_like",
    "new_full",
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


def _storages(value: Any) -> set[int]:
    """Storage addresses of the tensors in a value (lists, tuples and dicts searched)."""
    if isinstance(value, torch.Tensor):
        try:
            return {value.untyped_storage().data_ptr()} if value.numel() else set()
        except (RuntimeError, NotImplementedError):  # meta and fake tensors have no storage address
            return set()
    if isinstance(value, (list, tuple)):
        return set().union(*(_storages(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return _storages(list(value.values()))
    return set()


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


class DataFlow:
    """Which storages hold results of the candidate's own kernels, followed through later ops.

    A kernel writes the arguments its source stores to (Triton), else the tensors a call returns
    and the fresh allocations it is given (C++ extensions); an op reading a marked storage passes
    the mark on to its outputs. An output without the mark did not come from any custom kernel.
    """

    def __init__(self, protected: set[int]) -> None:
        self.protected = protected
        self.marked: set[int] = set()
        self.allocated: set[int] = set()
        self.calls = 0

    def kernel(self, args: Any, outputs: Any = None, written: Any = None) -> None:
        self.calls += 1
        if written is not None:
            self.marked |= _storages(written) - self.protected
            return
        out = _storages(outputs)
        given = _storages(args) - self.protected
        self.marked |= out | (given & self.allocated) | (given if not out else set())

    def op(self, name: str, args: Any, outputs: Any) -> None:
        if name.split(".", 1)[-1] in ALLOCATION_OPS:
            self.allocated |= _storages(outputs)
        elif self.marked and _storages(args) & self.marked:
            self.marked |= _storages(outputs)

    def reaches(self, output: torch.Tensor) -> bool:
        return bool(_storages(output) & self.marked) or output.numel() == 0


_STORED: dict[int, set[str] | None] = {}


def stored_params(fn: Any) -> set[str] | None:
    """Parameters of a Triton kernel that its source stores through (tl.store, atomics, descriptor
    stores), followed through local assignments; None when the source cannot be read."""
    key = id(fn)
    if key in _STORED:
        return _STORED[key]
    import ast
    import textwrap

    try:
        src = getattr(fn, "src", "") or inspect.getsource(getattr(fn, "fn", fn))
        tree = ast.parse(textwrap.dedent(src[src.index("def ") :] if "def " in src else src))
        func = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    except (OSError, TypeError, SyntaxError, StopIteration, AttributeError):
        _STORED[key] = None
        return None
    params = {a.arg for a in func.args.args}
    deps: dict[str, set[str]] = {}
    for n in ast.walk(func):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
            names = {m.id for m in ast.walk(n.value) if isinstance(m, ast.Name)}
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                for m in ast.walk(t):
                    if isinstance(m, ast.Name):
                        deps.setdefault(m.id, set()).update(names)
    seeds: set[str] = set()
    for n in ast.walk(func):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and (n.func.attr == "store" or n.func.attr.startswith("atomic_"))
        ):
            target = (
                [n.func.value]
                if not isinstance(n.func.value, ast.Name) or n.func.value.id not in ("tl", "triton")
                else []
            )
            target += n.args[:1] + [k.value for k in n.keywords if k.arg == "pointer"]
            seeds |= {m.id for t in target for m in ast.walk(t) if isinstance(m, ast.Name)}
    seen: set[str] = set()
    while seeds:
        name = seeds.pop()
        if name not in seen:
            seen.add(name)
            seeds |= deps.get(name, set())
    _STORED[key] = seen & params
    return _STORED[key]


class _Active:
    flow: DataFlow | None = None


ACTIVE = _Active()


def note_custom_call(args: Any, outputs: Any = None, written: Any = None) -> None:
    """Called by every custom launch (Triton, the CUDA helper, a load_inline function)."""
    if ACTIVE.flow is not None:
        ACTIVE.flow.kernel(args, outputs, written)


def _note_triton(fn: Any, args: tuple, kwargs: dict) -> None:
    if ACTIVE.flow is None:
        return
    names = stored_params(fn)
    try:
        arg_names = list(
            getattr(fn, "arg_names", None) or inspect.signature(getattr(fn, "fn", fn)).parameters
        )
    except (TypeError, ValueError):
        arg_names = []
    if names is None or not arg_names:
        note_custom_call((args, kwargs))
        return
    bound = dict(zip(arg_names, args, strict=False)) | {
        k: v for k, v in kwargs.items() if k in arg_names
    }
    note_custom_call((args, kwargs), written=[bound[n] for n in names if n in bound])


class OpRecorder(TorchDispatchMode):
    """Records aten op names (without overloads) dispatched while active; with `flow`, also
    which storages carry a custom kernel's results."""

    def __init__(self, flow: DataFlow | None = None) -> None:
        super().__init__()
        self.ops: dict[str, int] = {}
        self.flow = flow

    def __enter__(self) -> OpRecorder:
        if self.flow is not None:
            ACTIVE.flow = self.flow
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self.flow is not None:
            ACTIVE.flow = None
        return super().__exit__(*exc)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        name = op_name(func)
        self.ops[name] = self.ops.get(name, 0) + 1
        out = func(*args, **(kwargs or {}))
        if self.flow is not None:
            self.flow.op(name, (args, kwargs or {}), out)
        return out

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
                    bound = inspect.signature(fn).bind_partial(
                        *args,
                        **{
                            k: v for k, v in kwargs.items() if k in inspect.signature(fn).parameters
                        },
                    )
                    LAUNCHES.signatures[name] = {
                        "args": {k: _describe(v) for k, v in bound.arguments.items()},
                        "options": {
                            k: v
                            for k, v in kwargs.items()
                            if k in ("num_warps", "num_stages", "num_ctas")
                        },
                    }
                except TypeError:
                    pass
            _note_triton(self, args, kwargs)
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
    from kernelevo import cuda as kcuda
    from kernelevo.backends import inline

    kcuda.launch_hook = note_custom_call
    inline.call_hook = note_custom_call


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
