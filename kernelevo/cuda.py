"""CUDA fast path: CUDA C++ compiled in about 0.1 s, launched on torch's current stream.

`load_inline` spends 40-70 s building a Python extension around one kernel; this path
compiles only the kernel (NVRTC in-process, or `nvcc -cubin` for what NVRTC cannot do,
cached on disk by content hash, so a re-run loads in milliseconds) and launches it through
the CUDA driver (NVIDIA's `cuda.bindings`) in the context torch already uses, on
`torch.cuda.current_stream()`, so timers, CUDA graphs and stream semantics see it like
any torch op.

Example (a candidate's `ModelNew`)::

    import numpy as np
    import torch
    from kernelevo import cuda

    SOURCE = r'''
    extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i];
    }
    '''
    module = cuda.compile(SOURCE)

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            x = x.contiguous()
            y = torch.empty_like(x)
            n = x.numel()
            module.scale(x, y, np.float32(2.0), np.int32(n), grid=((n + 255) // 256,), block=(256,))
            return y

Rules the kernel author must know:
- Kernels are `extern "C" __global__` (otherwise their names are C++-mangled).
- A tensor argument becomes its raw device pointer (`data_ptr()`): the kernel sees the
  memory, not the shape, strides or dtype. Tensors must be contiguous CUDA tensors on
  the current device; pass sizes and strides yourself.
- Scalars must be numpy scalars of the kernel's parameter type (`np.int32`, `np.int64`,
  `np.float32`, ...): a Python int or float has no fixed width and is refused.
- `grid`/`block` are 1-3 ints; `shared` is dynamic shared memory in bytes (above 48 KB
  the opt-in attribute is set for you). `-O3 --use_fast_math` is not on by default:
  fast math fails the float32 tolerances; pass it in `options` if you mean it.

Without a GPU, `KERNELEVO_CUDA_COMPILE_ONLY=1` (or `set_compile_only(True)`) still
compiles for sm_90 and reports compile errors; launching then raises
`CudaUnavailable("compiled, not run (no GPU)")`.

Environment: KERNELEVO_CUDA_COMPILE_ONLY, KERNELEVO_CUDA_ARCH (compile-only target,
default sm_90), KERNELEVO_NVCC_TIMEOUT (seconds per compile, NVRTC's or nvcc's, default 120), KERNELEVO_CACHE
(cubins go to `$KERNELEVO_CACHE/cuda`, default `~/.cache/kernelevo/cuda`), KERNELEVO_NVCC.
"""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Sequence
from typing import Any

from kernelevo.backends.cubin import build_cubin, cache_key
from kernelevo.backends.cuda_args import kernel_args, launch_dims, param_sizes_from_source
from kernelevo.backends.cuda_driver import driver
from kernelevo.backends.nvcc import (
    NOT_RUN,
    CudaCompileError,
    CudaCompileTimeout,
    CudaError,
    CudaLaunchError,
    CudaUnavailable,
    compile_only,
    set_compile_only,
)

__all__ = [
    "CudaCompileError",
    "CudaCompileTimeout",
    "CudaError",
    "CudaKernel",
    "CudaLaunchError",
    "CudaModule",
    "CudaUnavailable",
    "cache_key",
    "compile",
    "compile_only",
    "compiled_sources",
    "kernel_args",
    "launch_count",
    "launch_dims",
    "param_sizes_from_source",
    "reset_records",
    "set_compile_only",
]

DEFAULT_OPTIONS = ("-lineinfo",)
COMPILE_ONLY_ARCH = "sm_90"
_STATIC_SHARED_LIMIT = 48 * 1024

_launches = 0
_compiled: list[str] = []


launch_hook: Any = None  # set by the verifier (opwatch): sees each launch's arguments


def launch_count() -> int:
    """Kernels launched through this module since the process started (never reset)."""
    return _launches


def compiled_sources() -> list[str]:
    """Sources passed to `compile()` (both modes), oldest first."""
    return list(_compiled)


def reset_records() -> None:
    """Forget `compiled_sources()` (between candidates in a persistent worker)."""
    _compiled.clear()


def _norm_arch(arch: str) -> str:
    a = str(arch).strip().lower()
    if re.fullmatch(r"\d{2,3}a?", a):
        return f"sm_{a}"
    if re.fullmatch(r"(sm|compute)_\d{2,3}[af]?", a):
        return "sm_" + a.split("_", 1)[1]
    raise ValueError(f"arch={arch!r}: expected e.g. 'sm_90' or 'sm_90a'")


def _options(options: Sequence[str] | None) -> list[str]:
    if options is None:
        return list(DEFAULT_OPTIONS)
    if isinstance(options, str) or not all(isinstance(o, str) for o in options):
        raise TypeError("options must be a list of strings, e.g. ['--use_fast_math']")
    for o in options:
        if re.match(r"-(arch|gencode|code)\b|--gpu-architecture|--gpu-code|--generate-code", o):
            raise ValueError(
                f"option {o!r}: choose the target with compile(..., arch='sm_90a') instead"
            )
    return list(DEFAULT_OPTIONS) + [o for o in options if o not in DEFAULT_OPTIONS]


def compile(
    source: str, *, options: list[str] | None = None, arch: str | None = None
) -> CudaModule:
    """Compile CUDA C++ with `extern "C" __global__` kernels into a launchable module.

    `options` are extra nvcc flags (added to `-lineinfo`; NVRTC takes most, nvcc the rest);
    `arch` defaults to the current device's (e.g. sm_90), or sm_90 / `$KERNELEVO_CUDA_ARCH` in
    compile-only mode.
    Raises CudaCompileError (message: `kernel.cu:LINE: error ...`), CudaCompileTimeout,
    or CudaUnavailable when there is no GPU and compile-only mode is off.
    """
    if not isinstance(source, str):
        raise TypeError(f"source must be a str of CUDA C++, not {type(source).__name__}")
    opts = _options(options)
    if compile_only():
        target = _norm_arch(arch or os.environ.get("KERNELEVO_CUDA_ARCH") or COMPILE_ONLY_ARCH)
        key, data, compiler = build_cubin(source, opts, target)
        _compiled.append(source)
        return CudaModule(source, data, target, key, device=None, compiler=compiler)
    device, target = _gpu_target(arch)
    key, data, compiler = build_cubin(source, opts, target)
    _compiled.append(source)
    return CudaModule(source, data, target, key, device=device, compiler=compiler)


def _gpu_target(arch: str | None) -> tuple[int, str]:
    try:
        import torch
    except ImportError as e:
        raise CudaUnavailable(f"torch is not importable: {e}") from None
    if not torch.cuda.is_available():
        raise CudaUnavailable(
            "no CUDA GPU here (torch.cuda.is_available() is False); "
            "set KERNELEVO_CUDA_COMPILE_ONLY=1 to compile without running"
        )
    torch.cuda.init()
    device = torch.cuda.current_device()
    if arch is None:
        major, minor = torch.cuda.get_device_capability(device)
        return device, f"sm_{major}{minor}"
    return device, _norm_arch(arch)


# ---- modules and kernels ----

_TEXT_SYMBOL = re.compile(rb"\.text\.([A-Za-z_$][\w$]*)\x00")


class CudaModule:
    """A compiled module; each `extern "C" __global__` kernel is an attribute (a CudaKernel)."""

    def __init__(
        self,
        source: str,
        cubin: bytes,
        arch: str,
        key: str,
        device: int | None,
        compiler: str = "nvcc",
    ) -> None:
        self.source, self.cubin, self.arch, self.key, self.device = source, cubin, arch, key, device
        self.compiler = compiler  # "nvrtc" or "nvcc"
        self._kernels: dict[str, CudaKernel] = {}
        self._handle = None if device is None else driver().load(key, cubin, device)

    @property
    def kernel_names(self) -> list[str]:
        """Function symbols in the cubin: the kernels (and any device function not inlined)."""
        return sorted({m.decode() for m in _TEXT_SYMBOL.findall(self.cubin)})

    def function(self, name: str) -> CudaKernel:
        if name not in self._kernels:
            names = self.kernel_names
            if names and name not in names:
                mangled = [n for n in names if n.startswith("_Z") and name in n]
                hint = (
                    f' (it is C++-mangled as {mangled[0]}: declare it extern "C")'
                    if mangled
                    else ""
                )
                raise AttributeError(
                    f"no kernel {name!r} in this module{hint}; kernels: {', '.join(names)}"
                )
            self._kernels[name] = CudaKernel(self, name)
        return self._kernels[name]

    def __getattr__(self, name: str) -> CudaKernel:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.function(name)

    def __repr__(self) -> str:
        where = "compile-only" if self.device is None else f"cuda:{self.device}"
        return f"<CudaModule {self.arch} {where} kernels={self.kernel_names}>"


class CudaKernel:
    """One kernel: `kernel(*args, grid=..., block=..., shared=0, stream=None)`."""

    def __init__(self, module: CudaModule, name: str) -> None:
        self.module, self.name = module, name
        self._func: Any = None  # the driver's CUfunction; None in compile-only mode
        self._dyn_shared_max = _STATIC_SHARED_LIMIT
        if module.device is None or module._handle is None:
            self.param_sizes = param_sizes_from_source(module.source, name)
        else:
            self._func = driver().function(module._handle, name)
            self.param_sizes = driver().param_sizes(self._func) or param_sizes_from_source(
                module.source, name
            )

    def __call__(
        self, *args: Any, grid: Any, block: Any, shared: int = 0, stream: Any = None
    ) -> None:
        global _launches
        g, b = launch_dims(grid, block)
        try:
            shared = -1 if isinstance(shared, bool) else operator.index(shared)
        except TypeError:
            shared = -1
        if shared < 0:
            raise TypeError(
                f"shared={shared!r}: dynamic shared memory in bytes, a non-negative int"
            )
        device = self.module.device
        params = kernel_args(args, device=device, param_sizes=self.param_sizes, kernel=self.name)
        func = self._func
        if device is None or func is None:
            raise CudaUnavailable(f"{NOT_RUN}: kernel {self.name!r}")
        drv = driver()
        if shared > self._dyn_shared_max:
            drv.set_max_dynamic_shared(func, shared, self.name)
            self._dyn_shared_max = shared
        handle = _stream_handle(stream, device)
        drv.launch(func, g, b, shared, handle, params, self.name, device)
        _launches += 1
        if launch_hook is not None:
            launch_hook(args)

    def __repr__(self) -> str:
        return f"<CudaKernel {self.name} of {self.module!r}>"


def _stream_handle(stream: Any, device: int) -> int:
    if stream is None:
        import torch

        return int(torch.cuda.current_stream(device).cuda_stream)
    if hasattr(stream, "cuda_stream"):
        return int(stream.cuda_stream)
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    raise TypeError(
        f"stream={stream!r}: a torch.cuda.Stream, a raw handle, or None for torch's current stream"
    )
