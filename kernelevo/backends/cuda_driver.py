"""The CUDA driver API through ctypes: load a cubin and launch kernels in torch's context.

pycuda can only launch on streams it created, so it cannot launch on torch's current
stream; the few driver calls needed here go straight to libcuda, in the primary context
torch already uses (made current on the calling thread when it is not).
"""

from __future__ import annotations

import ctypes
from typing import Any

from kernelevo.backends.nvcc import CudaError, CudaLaunchError, CudaUnavailable

loaded: dict[
    tuple[str, int], int
] = {}  # (cache key, device) -> CUmodule handle, kept for the process

_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_drv: _Driver | None = None


def driver() -> _Driver:
    global _drv
    if _drv is None:
        _drv = _Driver()
    return _drv


class _Driver:
    def __init__(self) -> None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaUnavailable(f"no CUDA driver (libcuda.so.1): {e}") from None
        P, N, U, S = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_size_t
        sig = {
            "cuInit": [U],
            "cuDeviceGet": [ctypes.POINTER(N), N],
            "cuDevicePrimaryCtxRetain": [ctypes.POINTER(P), N],
            "cuCtxGetCurrent": [ctypes.POINTER(P)],
            "cuCtxSetCurrent": [P],
            "cuModuleLoadData": [ctypes.POINTER(P), ctypes.c_char_p],
            "cuModuleGetFunction": [ctypes.POINTER(P), P, ctypes.c_char_p],
            "cuFuncSetAttribute": [P, N, N],
            "cuFuncGetAttribute": [ctypes.POINTER(N), N, P],
            "cuDeviceGetAttribute": [ctypes.POINTER(N), N, N],
            "cuLaunchKernel": [P, U, U, U, U, U, U, U, P, ctypes.POINTER(P), ctypes.POINTER(P)],
            "cuGetErrorName": [N, ctypes.POINTER(ctypes.c_char_p)],
            "cuGetErrorString": [N, ctypes.POINTER(ctypes.c_char_p)],
        }
        for name, argtypes in sig.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, N
        self.param_info = getattr(lib, "cuFuncGetParamInfo", None)  # driver >= 12.4
        if self.param_info is not None:
            self.param_info.argtypes = [P, S, ctypes.POINTER(S), ctypes.POINTER(S)]
            self.param_info.restype = N
        self.lib = lib
        self.check(lib.cuInit(0), "cuInit")
        self.contexts: dict[int, int] = {}

    def error(self, rc: int) -> str:
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self.lib.cuGetErrorName(rc, ctypes.byref(name))
        self.lib.cuGetErrorString(rc, ctypes.byref(text))
        return f"{(name.value or b'CUDA_ERROR_%d' % rc).decode()}: {(text.value or b'').decode()}"

    def check(self, rc: int, what: str, cls: type[CudaError] = CudaError) -> None:
        if rc != 0:
            raise cls(f"{what} failed: {self.error(rc)}")

    def use_context(self, device: int) -> None:
        """Make torch's context (the device's primary context) current on this thread."""
        ctx = self.contexts.get(device)
        if ctx is None:
            dev, handle = ctypes.c_int(), ctypes.c_void_p()
            self.check(self.lib.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
            self.check(
                self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(handle), dev),
                "cuDevicePrimaryCtxRetain",
            )
            ctx = self.contexts[device] = int(handle.value or 0)
        cur = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(cur)), "cuCtxGetCurrent")
        if (cur.value or 0) != ctx:
            self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    def load(self, key: str, cubin: bytes, device: int) -> int:
        handle = loaded.get((key, device))
        if handle is None:
            self.use_context(device)
            mod = ctypes.c_void_p()
            self.check(
                self.lib.cuModuleLoadData(ctypes.byref(mod), cubin),
                "cuModuleLoadData (loading the cubin)",
                CudaUnavailable,
            )
            handle = loaded[(key, device)] = int(mod.value or 0)
        return handle

    def function(self, module: int, name: str) -> int:
        fn = ctypes.c_void_p()
        rc = self.lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode())
        if rc != 0:
            raise AttributeError(
                f"no kernel {name!r} in this module ({self.error(rc)}); "
                'kernels must be declared extern "C" __global__'
            )
        return int(fn.value or 0)

    def param_sizes(self, func: int) -> list[int | None] | None:
        if self.param_info is None:
            return None
        sizes: list[int | None] = []
        off, size = ctypes.c_size_t(), ctypes.c_size_t()
        while self.param_info(func, len(sizes), ctypes.byref(off), ctypes.byref(size)) == 0:
            sizes.append(int(size.value))
            if len(sizes) > 4096:
                return None
        return sizes

    def set_max_dynamic_shared(self, func: int, nbytes: int, name: str) -> None:
        rc = self.lib.cuFuncSetAttribute(
            func, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes
        )
        if rc != 0:
            static = ctypes.c_int()
            self.lib.cuFuncGetAttribute(
                ctypes.byref(static), _CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func
            )
            raise CudaLaunchError(
                f"{name}: cannot allow {nbytes} bytes of dynamic shared memory "
                f"(static shared {static.value} bytes; {self.error(rc)})"
            )

    def launch(
        self,
        func: int,
        g: tuple[int, int, int],
        b: tuple[int, int, int],
        shared: int,
        stream: int,
        params: list[Any],
        name: str,
        device: int,
    ) -> None:
        self.use_context(device)
        n = len(params)
        ptrs = (ctypes.c_void_p * max(n, 1))(*[ctypes.addressof(p) for p in params])
        rc = self.lib.cuLaunchKernel(
            func, g[0], g[1], g[2], b[0], b[1], b[2], shared, stream, ptrs if n else None, None
        )
        if rc != 0:
            raise CudaLaunchError(
                f"launching {name} with grid={g} block={b} shared={shared} failed: {self.error(rc)}"
            )
