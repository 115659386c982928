"""Compiling a candidate for the GPU in a compile worker, before the GPU's run worker sees it.

The compile worker has no GPU. It imports the candidate and calls ModelNew.forward on
the task's inputs as meta tensors (shapes, dtypes and alignment, no data), with Triton
pointed at a stand-in driver for the GPU's architecture and every launch turned into
a compile. Triton's binder then computes the same specialisations the run worker's
will, so the kernels land in the shared Triton cache under the keys the run worker
looks up. The CUDA fast path (NVRTC or nvcc cubins) and load_inline builds are content-hashed
caches already: importing the candidate here fills them.

The inputs say `is_cuda` (most published Triton candidates `assert x.is_cuda` before
launching), so guarded forwards compile ahead too. Only compile errors are conclusive.
Anything else the forward pass does on meta tensors (`.item()`, allocating with
`device="cuda"`) just leaves the rest to the run worker's JIT.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kernelevo.worker.compile_replies import Compiled
from kernelevo.worker.compile_requests import Precompile

COMPILE_ERRORS = (
    "CompilationError",
    "CudaCompileError",
    "CompileTimeAssertionFailure",
    "OutOfResources",
)

# Shared memory one block may opt into, by compute capability (CUDA programming guide): a kernel
# compiled to need more fails at its first launch, so it is found here instead of on the GPU.
SHARED_MEMORY_PER_BLOCK = {
    70: 98304,
    72: 49152,
    75: 65536,
    80: 166912,
    86: 101376,
    87: 166912,
    89: 101376,
    90: 232448,
    100: 232448,
    103: 232448,
    120: 101376,
}


class _CompileOnlyDriver:
    """What Triton's JIT asks the active driver while binding and compiling a launch."""

    def __init__(self, arch: int) -> None:
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", arch, 32)

    def get_current_target(self) -> Any:
        return self.target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("meta")


@contextmanager
def triton_compile_only(
    arch: int, compiled: list[str], launchers: list[dict[str, Any]] | None = None
) -> Iterator[None]:
    """Launches compile for sm_<arch> and return without running; kernel names go to `compiled`,
    the argument signatures whose C launcher the judge may build to `launchers` (see
    `launcher_spec`).
    The compiles run side by side in Triton's async compile mode (each input set's shapes are a
    specialization of its own, and an autotuned kernel one per configuration); leaving the block
    waits for all of them and raises the first compile error."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.driver import driver
    from triton.runtime.jit import JITFunction

    original, original_tuned = JITFunction.run, Autotuner.run
    tuning = False
    launched: list[tuple[Any, bool]] = []

    def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> Any:
        kernel = original(self, *args, grid=grid, warmup=True, **kwargs)
        compiled.append(getattr(self, "__name__", "kernel"))
        launched.append((kernel, tuning))  # a tuned configuration that does not fit is skipped
        return kernel

    def run_tuned(
        self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any
    ) -> Any:
        """Every configuration compiles (the run worker's autotuner will try them all)."""
        nonlocal tuning
        tuning = True
        try:
            for config in self.configs:
                self.fn.run(*args, grid=grid, warmup=True, **{**kwargs, **config.all_kwargs()})
        finally:
            tuning = False

    previous = driver._active
    driver.set_active(_CompileOnlyDriver(arch))  # type: ignore[arg-type]
    JITFunction.run, Autotuner.run = run, run_tuned  # type: ignore[method-assign]
    try:
        with _side_by_side():
            yield
        for kernel, tuned in launched:
            kernel = _resolved(kernel)
            if kernel is None:
                continue
            if not tuned:
                check_shared_memory(kernel, arch)
            spec = launcher_spec(kernel)
            if spec is None:
                _build_launcher(kernel)
            elif launchers is not None and spec not in launchers:
                launchers.append(spec)
    finally:
        for kernel, _ in launched:  # a failed compile's future holds the compiler's frames
            _resolved(kernel, ignore_errors=True)
        launched.clear()
        JITFunction.run, Autotuner.run = original, original_tuned  # type: ignore[method-assign]
        driver._active = previous


def _resolved(kernel: Any, ignore_errors: bool = False) -> Any:
    try:
        from triton.runtime._async_compile import FutureKernel
    except ImportError:
        return kernel
    return kernel.result(ignore_errors) if isinstance(kernel, FutureKernel) else kernel


@contextmanager
def _side_by_side() -> Iterator[None]:
    """Triton's async compile mode over a few threads (its passes and ptxas run without the GIL);
    a Triton without it compiles one launch at a time."""
    try:
        from triton.runtime._async_compile import AsyncCompileMode
    except ImportError:
        yield
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1))) as pool, AsyncCompileMode(pool):
        yield


def check_shared_memory(kernel: Any, arch: int) -> None:
    """Raises Triton's own OutOfResources, worded as the GPU would, for a kernel too big for the arch."""
    from triton.runtime.errors import OutOfResources

    need = int(getattr(getattr(kernel, "metadata", None), "shared", 0) or 0)
    limit = SHARED_MEMORY_PER_BLOCK.get(arch)
    if limit is not None and need > limit:
        raise OutOfResources(need, limit, "shared memory")


def launcher_spec(kernel: Any) -> dict[str, Any] | None:
    """What Triton's C launcher for `kernel` is generated from: its argument types (and which
    tensor descriptors are lowered to TMA). A Triton that compiles one launcher per signature (gcc,
    0.3 s on an H100 host) builds it at a kernel's first launch into the candidate's own cache,
    where no other candidate may look; the judge builds it from these types instead, into the
    shared cache every candidate reads (judge/launchers.py), once per signature. None where this
    Triton builds no such launcher or the kernel says nothing of its signature."""
    try:
        import triton.backends.nvidia.driver as nvidia
    except ImportError:
        return None
    if not (hasattr(nvidia, "make_launcher") and hasattr(nvidia, "compile_module_from_src")):
        return None
    signature = getattr(getattr(kernel, "src", None), "signature", None)
    if not isinstance(signature, dict):
        return None
    meta = getattr(getattr(kernel, "metadata", None), "tensordesc_meta", None)
    return {
        "signature": [_plain(t) for t in signature.values()],
        "tma": None if meta is None else [m is not None for m in meta],
    }


def _plain(ty: Any) -> Any:
    return [_plain(t) for t in ty] if isinstance(ty, (tuple, list)) else str(ty)


def _build_launcher(kernel: Any) -> None:
    """A Triton whose launcher is not built from `launcher_spec`: built here, into the candidate's
    own cache, so its first launch does not wait for it. Needs libcuda to link (GPU machines only)."""
    try:
        from triton.backends.nvidia.driver import CudaLauncher

        CudaLauncher(kernel.src, kernel.metadata)
    except (
        Exception
    ):  # no libcuda here, or another Triton version: the run worker builds it instead
        pass


def _cuda_looking() -> type:
    """Meta tensors whose `is_cuda` is True; results of ops on them keep the type. Only `is_cuda`
    is faked: a tensor whose `device` said cuda would make torch allocate real CUDA memory, and
    fake CUDA tensors abort a CPU-only torch in its device guard."""
    import torch

    class CudaLookingMeta(torch.Tensor):
        @property
        def is_cuda(self) -> bool:  # type: ignore[override]
            return True

    return CudaLookingMeta


def as_cuda_looking(value: Any, cls: type) -> Any:
    import torch

    if isinstance(value, torch.Tensor) and value.device.type == "meta":
        return torch.Tensor._make_subclass(cls, value)
    return value


def _input_sets(task: Any, seed: int) -> list[list[Any]]:
    import torch

    sets = []
    torch.manual_seed(seed)
    with torch.device("meta"):
        sets.append(list(task.get_inputs()))
        extra = getattr(task, "get_extra_inputs", None)
        if extra is not None:
            sets.extend(list(e) for e in extra())
    cls = _cuda_looking()
    return [
        [as_cuda_looking(a.to("meta"), cls) if isinstance(a, torch.Tensor) else a for a in s]
        for s in sets
    ]


def precompile(req: Precompile) -> Compiled:
    """`build_inline` (GPU machines): build load_inline extensions for real instead of checking
    their sources."""
    import torch

    from kernelevo import cuda
    from kernelevo.task import import_file, load_task_module

    t0 = time.perf_counter()
    arch = int(req.arch or 90)
    backend = req.backend
    os.environ["KERNELEVO_CUDA_ARCH"] = f"sm_{arch}"
    compiled: list[str] = []
    launchers: list[dict[str, Any]] = []
    note = ""
    try:
        task = load_task_module(req.task_path, req.size or "default")
        if backend == "cuda_inline" and req.build_inline:
            cuda.set_compile_only(
                False
            )  # a real build into the content-hashed folder the run worker will use
        from kernelevo.backends.inline import install_load_inline_guard

        install_load_inline_guard()
        with triton_compile_only(arch, compiled, launchers):
            cand = import_file(req.candidate_path, "precompile")
            model = cand.ModelNew(*task.get_init_inputs())  # some candidates compile in __init__
            if backend == "triton":
                model = model.to("meta").eval()
                with torch.no_grad():
                    for args in _input_sets(task, int(req.seed or 0)):
                        try:
                            model(*args)
                        except Exception as exc:
                            if type(exc).__name__ in COMPILE_ERRORS:
                                raise
                            note = f"forward on meta tensors stopped: {type(exc).__name__}: {str(exc)[:200]}"
                            break
    except Exception as exc:
        name = type(exc).__name__
        if name in COMPILE_ERRORS or "CompilationError" in name:
            return Compiled(
                status="compile_error",
                reason=f"{name}: {str(exc)[:3000]}",
                kernels=compiled,
                seconds=time.perf_counter() - t0,
            )
        note = f"{name} while compiling ahead: {str(exc)[:300]}"
    finally:
        cuda.set_compile_only(None)
    return Compiled(
        status="partial" if note else "compiled",
        reason=note,
        kernels=sorted(set(compiled)),
        seconds=time.perf_counter() - t0,
        launchers=launchers,
    )
