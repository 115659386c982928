"""The CUDA driver through NVIDIA's `cuda.bindings.driver`: load a cubin and launch its kernels
in torch's context, on whatever raw stream handle torch gives (its current stream by default).

pycuda launches only on streams it created, in a context of its own, so it cannot launch on
torch's current stream; `cuda.bindings` wraps every driver call, and this module makes the
device's primary context (the one torch uses) current on the calling thread before it loads or
launches. `cuda.core` would do the same from higher up, but importing it costs 0.17-0.44 s, which
a fresh process's cache hit (< 0.1 s) cannot afford; `cuda.bindings.driver` costs ~0.03 s.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

from kernelevo.backends.nvcc import CudaError, CudaLaunchError, CudaUnavailable

loaded: dict[tuple[str, int], Any] = {}  # (cache key, device) -> CUmodule, kept for the process


def cu_version() -> str:
    from cuda.bindings import __version__

    return str(__version__)


@functools.lru_cache(maxsize=1)
def driver() -> _Driver:
    return _Driver()


class _Driver:
    def __init__(self) -> None:
        try:
            from cuda.bindings import driver as cu
        except ImportError as e:
            raise CudaUnavailable(
                f"the CUDA fast path needs cuda-bindings ({e}): pip install cuda-bindings"
            ) from None
        self.cu = cu
        try:
            (rc,) = cu.cuInit(0)
            _, cuda_version = cu.cuDriverGetVersion()  # e.g. 13000 for CUDA 13.0
        except RuntimeError as e:  # libcuda.so.1 could not be loaded
            raise CudaUnavailable(f"no CUDA driver (libcuda.so.1): {e}") from None
        self.check(rc, "cuInit", CudaUnavailable)
        major = int(cu_version().split(".")[0])
        if cuda_version // 1000 < major:
            raise CudaUnavailable(
                f"the driver supports CUDA {cuda_version // 1000}.{cuda_version % 1000 // 10}, "
                f"cuda-bindings {cu_version()} needs CUDA {major}: "
                f"pip install 'cuda-bindings=={cuda_version // 1000}.*'"
            )
        self.contexts: dict[int, Any] = {}
        self.streams: dict[int, Any] = {}

    def error(self, rc: Any) -> str:
        try:
            _, name = self.cu.cuGetErrorName(rc)
            _, text = self.cu.cuGetErrorString(rc)
        except (RuntimeError, ValueError):
            return str(rc)
        return f"{(name or str(rc).encode()).decode()}: {(text or b'').decode()}"

    def check(self, rc: Any, what: str, cls: type[CudaError] = CudaError) -> None:
        if rc != self.cu.CUresult.CUDA_SUCCESS:
            raise cls(f"{what} failed: {self.error(rc)}")

    def use_context(self, device: int) -> None:
        """Make torch's context (the device's primary context) current on this thread."""
        cu = self.cu
        ctx = self.contexts.get(device)
        if ctx is None:
            rc, dev = cu.cuDeviceGet(device)
            self.check(rc, "cuDeviceGet")
            rc, ctx = cu.cuDevicePrimaryCtxRetain(dev)
            self.check(rc, "cuDevicePrimaryCtxRetain")
            self.contexts[device] = ctx
        rc, cur = cu.cuCtxGetCurrent()
        self.check(rc, "cuCtxGetCurrent")
        if int(cur) != int(ctx):
            self.check(cu.cuCtxSetCurrent(ctx)[0], "cuCtxSetCurrent")

    def load(self, key: str, cubin: bytes, device: int) -> Any:
        module = loaded.get((key, device))
        if module is None:
            self.use_context(device)
            rc, module = self.cu.cuModuleLoadData(cubin)
            self.check(rc, "cuModuleLoadData (loading the cubin)", CudaUnavailable)
            loaded[(key, device)] = module
        return module

    def function(self, module: Any, name: str) -> Any:
        rc, fn = self.cu.cuModuleGetFunction(module, name.encode())
        if rc != self.cu.CUresult.CUDA_SUCCESS:
            raise AttributeError(
                f"no kernel {name!r} in this module ({self.error(rc)}); "
                'kernels must be declared extern "C" __global__'
            )
        return fn

    def param_sizes(self, func: Any) -> list[int | None] | None:
        """Each parameter's size in bytes from the driver (>= 12.4); None where it cannot say."""
        query = getattr(self.cu, "cuFuncGetParamInfo", None)
        if query is None:
            return None
        sizes: list[int | None] = []
        while len(sizes) <= 4096:
            try:
                rc, _, size = query(func, len(sizes))
            except RuntimeError:  # the driver lacks the symbol
                return None
            if rc != self.cu.CUresult.CUDA_SUCCESS:
                return sizes
            sizes.append(int(size))
        return None

    def set_max_dynamic_shared(self, func: Any, nbytes: int, name: str) -> None:
        attr = self.cu.CUfunction_attribute
        (rc,) = self.cu.cuFuncSetAttribute(
            func, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes
        )
        if rc != self.cu.CUresult.CUDA_SUCCESS:
            _, static = self.cu.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func)
            raise CudaLaunchError(
                f"{name}: cannot allow {nbytes} bytes of dynamic shared memory "
                f"(static shared {static} bytes; {self.error(rc)})"
            )

    def stream(self, handle: int) -> Any:
        """The driver's handle object for a raw stream handle (torch's `cuda_stream`)."""
        s = self.streams.get(handle)
        if s is None:
            s = self.streams[handle] = self.cu.CUstream(handle)
        return s

    def launch(
        self,
        func: Any,
        g: tuple[int, int, int],
        b: tuple[int, int, int],
        shared: int,
        stream: int,
        params: list[Any],
        name: str,
        device: int,
    ) -> None:
        """`params` are ctypes values; their addresses, in order, are the kernel's parameters."""
        self.use_context(device)
        n = len(params)
        ptrs = (ctypes.c_void_p * max(n, 1))(*[ctypes.addressof(p) for p in params])
        (rc,) = self.cu.cuLaunchKernel(
            func,
            g[0],
            g[1],
            g[2],
            b[0],
            b[1],
            b[2],
            shared,
            self.stream(stream),
            ctypes.addressof(ptrs) if n else 0,
            0,
        )
        if rc != self.cu.CUresult.CUDA_SUCCESS:
            raise CudaLaunchError(
                f"launching {name} with grid={g} block={b} shared={shared} failed: {self.error(rc)}"
            )
