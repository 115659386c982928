"""GPU memory shared between the judge and a candidate process by legacy CUDA IPC handles, one allocation each.

PyTorch's own sharing (`_share_cuda_`) failed on the H200 even between two plain processes,
while a handle from `cudaIpcGetMemHandle` opened in every sandbox we use (bench/cuda_ipc_sandbox.py).
Every block here is its own `cudaMalloc`, so a handle maps exactly that block and never a
caching-allocator segment holding the judge's other tensors (its reference outputs, its
private input copies). The runtime is the libcudart PyTorch already loaded (same primary context).
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from typing import Any

import torch

HANDLE_BYTES = 64
_LAZY_PEER_ACCESS = 1
_lock = threading.Lock()
_lib: Any = None
_own: weakref.WeakValueDictionary[int, _Block]  # blocks made here, by address
_opened: weakref.WeakValueDictionary[bytes, _Block]  # blocks mapped from another process, by handle


class CudaIpcError(RuntimeError):
    """A block could not be allocated, exported or opened (the caller falls back to files)."""


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * HANDLE_BYTES)]


def _cudart() -> Any:
    global _lib
    with _lock:
        if _lib is None:
            torch.cuda.init()
            with open("/proc/self/maps") as f:
                paths = [line.split()[-1] for line in f if "libcudart.so" in line]
            if not paths:
                raise CudaIpcError("no CUDA runtime library is loaded in this process")
            lib = ctypes.CDLL(paths[0])
            vp = ctypes.c_void_p
            lib.cudaMalloc.argtypes = [ctypes.POINTER(vp), ctypes.c_size_t]
            lib.cudaFree.argtypes = [vp]
            lib.cudaSetDevice.argtypes = [ctypes.c_int]
            lib.cudaIpcGetMemHandle.argtypes = [ctypes.POINTER(_Handle), vp]
            lib.cudaIpcOpenMemHandle.argtypes = [ctypes.POINTER(vp), _Handle, ctypes.c_uint]
            lib.cudaIpcCloseMemHandle.argtypes = [vp]
            lib.cudaGetErrorString.argtypes = [ctypes.c_int]
            lib.cudaGetErrorString.restype = ctypes.c_char_p
            _lib = lib
    return _lib


def _check(code: int, what: str) -> None:
    if code != 0:
        text = _cudart().cudaGetErrorString(code).decode(errors="replace")
        raise CudaIpcError(f"{what}: CUDA error {code} ({text})")


def available() -> bool:
    """Whether blocks can be made and exported here: tried once on a block of 4 bytes."""
    global _works
    if _works is None:
        try:
            _works = torch.cuda.is_available() and bool(handle_of(empty(1, torch.float32, _here())))
        except Exception:  # any failure (a driver refusal, torch refusing the block) means files
            _works = False
    return _works


def _here() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device())


_works: bool | None = None


class _Block:
    """One device allocation, described by `__cuda_array_interface__` so torch maps it without a
    copy; freed (or, for an opened handle, closed) when the last tensor over it goes."""

    def __init__(self, ptr: int, nbytes: int, device: int, opened: bool) -> None:
        self.ptr, self.nbytes, self.device, self.opened = ptr, nbytes, device, opened
        self.__cuda_array_interface__ = {
            "shape": (max(nbytes, 1),),
            "typestr": "|u1",
            "strides": None,
            "data": (ptr, False),
            "version": 2,
        }

    def __del__(self) -> None:
        lib = _lib
        if lib is None or not self.ptr:
            return
        lib.cudaSetDevice(self.device)
        if self.opened:
            lib.cudaIpcCloseMemHandle(ctypes.c_void_p(self.ptr))
        else:
            lib.cudaFree(ctypes.c_void_p(self.ptr))


def _raw(block: _Block) -> torch.Tensor:
    """A flat uint8 tensor over the block; its storage keeps the block alive."""
    return torch.as_tensor(block, device=f"cuda:{block.device}")


def empty(numel: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A flat tensor in an allocation of its own, exportable with `handle_of`."""
    lib = _cudart()
    index = device.index if device.index is not None else torch.cuda.current_device()
    nbytes = max(numel, 1) * torch.empty((), dtype=dtype).element_size()
    ptr = ctypes.c_void_p()
    _check(lib.cudaSetDevice(index), "cudaSetDevice")
    _check(lib.cudaMalloc(ctypes.byref(ptr), nbytes), f"cudaMalloc of {nbytes} bytes")
    block = _Block(int(ptr.value or 0), nbytes, index, opened=False)
    _own[block.ptr] = block
    return _raw(block).view(dtype)[:numel]


def copy_of(t: torch.Tensor) -> torch.Tensor:
    """`t`'s values, contiguous, in an allocation of its own (same shape)."""
    c = t.detach()
    out = empty(c.numel(), c.dtype, c.device)
    out.copy_(c.reshape(-1))
    return out.view(c.shape)


def owned(t: torch.Tensor) -> bool:
    """Whether `t` lives in an allocation made by `empty` (so `handle_of` can export it)."""
    return t.device.type == "cuda" and t.untyped_storage().data_ptr() in _own


def handle_of(t: torch.Tensor) -> dict[str, Any]:
    """Descriptor fields for a tensor made by `empty`/`copy_of`: the handle of its whole block."""
    block = _own.get(t.untyped_storage().data_ptr())
    if block is None:
        raise CudaIpcError("the tensor is not in an allocation of its own (use copy_of)")
    lib = _cudart()
    handle = _Handle()
    _check(lib.cudaSetDevice(block.device), "cudaSetDevice")
    _check(lib.cudaIpcGetMemHandle(ctypes.byref(handle), ctypes.c_void_p(block.ptr)), "export")
    torch.cuda.synchronize(block.device)  # the values are written before another process reads
    return {
        "device": block.device,
        "handle": ctypes.string_at(ctypes.addressof(handle), HANDLE_BYTES),
        "size": block.nbytes,
    }


def open_handle(handle: bytes, nbytes: int, device: int) -> torch.Tensor:
    """Map another process's block as a flat uint8 tensor; the mapping closes with the last tensor
    over it. A handle already open here is reused (the driver maps a handle once per context)."""
    if len(handle) != HANDLE_BYTES:
        raise CudaIpcError("a CUDA IPC handle is 64 bytes")
    block = _opened.get(handle)
    if block is None:
        lib = _cudart()
        h = _Handle.from_buffer_copy(handle)
        ptr = ctypes.c_void_p()
        _check(lib.cudaSetDevice(device), "cudaSetDevice")
        _check(lib.cudaIpcOpenMemHandle(ctypes.byref(ptr), h, _LAZY_PEER_ACCESS), "open")
        block = _Block(int(ptr.value or 0), nbytes, device, opened=True)
        _opened[handle] = block
    if block.nbytes < nbytes:
        raise CudaIpcError("a CUDA IPC descriptor claims more bytes than its block")
    return _raw(block)


_own = weakref.WeakValueDictionary()
_opened = weakref.WeakValueDictionary()
