"""Watching what a candidate really does: library ops it dispatches and kernels it launches.

A TorchDispatchMode sees every aten op, including those called from inside a C++
extension; Triton launches are counted by wrapping the launcher (and hidden from the
op recorder, since the interpreter itself uses torch ops on CPU).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from kernelevo.checks.library_ops import (
    ALLOCATION_OPS,
    GEMM_KERNEL,
    LIBRARY_FAMILIES,
    LIBRARY_KERNEL,
    NEUTRAL_OPS,
    OP_FAMILIES,
    VENDOR_KERNEL,
    _is_own,
    describe_split,
    is_neutral,
    kernel_check,
    library_op_check,
    needs_profile,
    op_name,
    own_kernel_names,
    policy_families,
)
from kernelevo.measure.precision import CONVOLUTION_OPS, convolution_runs_tf32

__all__ = [
    "ACTIVE",
    "ALLOCATION_OPS",
    "GEMM_KERNEL",
    "LAUNCHES",
    "LIBRARY_FAMILIES",
    "LIBRARY_KERNEL",
    "NEUTRAL_OPS",
    "OP_FAMILIES",
    "VENDOR_KERNEL",
    "DataFlow",
    "LaunchLog",
    "OpRecorder",
    "_is_own",
    "describe_split",
    "install_launch_counters",
    "is_neutral",
    "kernel_check",
    "library_op_check",
    "needs_profile",
    "note_custom_call",
    "op_name",
    "own_kernel_names",
    "policy_families",
    "profile_kernels",
    "stored_params",
    "total_launches",
]


def profile_kernels(run: Callable[[], Any]) -> list[str]:
    """Names of the CUDA kernels one forward launches (the profiler sees past C++ extensions).

    Kineto through torch.autograd.profiler, not torch.profiler.profile: the latter's start asks
    `hasattr(torch, "_inductor")`, which imports Inductor and Dynamo (3.5 s in a fresh process)."""
    from torch.autograd import profiler

    cuda = torch.cuda.is_available()
    with profiler.profile(
        use_cpu=not cuda, use_device="cuda" if cuda else None, use_kineto=True
    ) as prof:
        run()
        if cuda:
            torch.cuda.synchronize()
    device = torch.autograd.DeviceType.CUDA
    return [e.name for e in prof.function_events if e.device_type == device]


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
        self.tf32_convolution = False  # a float32 CUDA convolution ran in TF32 (cuDNN's default)

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
        if not self.tf32_convolution and name in CONVOLUTION_OPS:
            self.tf32_convolution = convolution_runs_tf32(name, tuple(args))
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
