"""GPU memory shared between the judge and a candidate process by legacy CUDA IPC handles, one allocation each.

PyTorch's own sharing (`_share_cuda_`) failed on the H200 even between two plain processes,
while a legacy handle of a plain device allocation opened in every sandbox we use
(bench/cuda_ipc_sandbox.py). Every block here is its own `cuMemAlloc`, so a handle maps exactly
that block and never a caching-allocator segment holding the judge's other tensors (its
reference outputs, its private input copies).

The calls go through NVIDIA's `cuda.bindings.driver`, loaded on first use (the engine and the
language server never load it), in the device's primary context, the one torch's runtime works
in, made current on the calling thread by the CUDA fast path's driver (backends/cuda_driver.py).
The driver API rather than `cuda.bindings.runtime`: that module carries a CUDA runtime of its
own, a second one beside the libcudart torch loaded, with its own per-thread current device;
the driver API is one libcuda per process and every call here names the context it works in.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from kernelevo.backends.cuda_driver import driver
from kernelevo.backends.nvcc import CudaError

HANDLE_BYTES = 64
_own: weakref.WeakValueDictionary[int, _Block]  # blocks made here, by address
_opened: weakref.WeakValueDictionary[bytes, _Block]  # blocks mapped from another process, by handle


class CudaIpcError(CudaError):
    """A block could not be allocated, exported or opened (the caller falls back to files)."""


def _driver_on(device: int) -> Any:
    """The driver, with `device`'s primary context (torch's) current on this thread."""
    torch.cuda.init()
    try:
        d = driver()
        d.use_context(device)
    except CudaError as e:  # no cuda-bindings, no libcuda, a driver too old for the bindings
        raise CudaIpcError(str(e)) from None
    return d


def _result(d: Any, result: tuple[Any, ...], what: str) -> Any:
    """The value of a `(CUresult, value)` pair, or a one-line CudaIpcError naming the call."""
    d.check(result[0], what, CudaIpcError)
    return result[1] if len(result) > 1 else None


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
        if not self.ptr:
            return
        try:  # nothing can be raised from here; at interpreter exit the bindings may be gone
            d = driver()
            d.use_context(self.device)
            if self.opened:
                d.cu.cuIpcCloseMemHandle(self.ptr)
            else:
                d.cu.cuMemFree(self.ptr)
        except Exception:
            pass


def _raw(block: _Block) -> torch.Tensor:
    """A flat uint8 tensor over the block; its storage keeps the block alive."""
    return torch.as_tensor(block, device=f"cuda:{block.device}")


def empty(numel: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A flat tensor in an allocation of its own, exportable with `handle_of`."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    nbytes = max(numel, 1) * torch.empty((), dtype=dtype).element_size()
    d = _driver_on(index)
    ptr = int(_result(d, d.cu.cuMemAlloc(nbytes), f"cuMemAlloc of {nbytes} bytes"))
    block = _Block(ptr, nbytes, index, opened=False)
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
    d = _driver_on(block.device)
    handle = bytes(_result(d, d.cu.cuIpcGetMemHandle(block.ptr), "cuIpcGetMemHandle").reserved)
    if len(handle) != HANDLE_BYTES:
        raise CudaIpcError(f"cuIpcGetMemHandle gave {len(handle)} bytes, not {HANDLE_BYTES}")
    torch.cuda.synchronize(block.device)  # the values are written before another process reads
    return {"device": block.device, "handle": handle, "size": block.nbytes}


def open_handle(handle: bytes, nbytes: int, device: int) -> torch.Tensor:
    """Map another process's block as a flat uint8 tensor; the mapping closes with the last tensor
    over it. A handle already open here is reused (the driver maps a handle once per context)."""
    if len(handle) != HANDLE_BYTES:
        raise CudaIpcError("a CUDA IPC handle is 64 bytes")
    block = _opened.get(handle)
    if block is None:
        d = _driver_on(device)
        h = d.cu.CUipcMemHandle()
        h.reserved = handle
        lazy = int(d.cu.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        ptr = int(_result(d, d.cu.cuIpcOpenMemHandle(h, lazy), "cuIpcOpenMemHandle"))
        block = _Block(ptr, nbytes, device, opened=True)
        _opened[handle] = block
    if block.nbytes < nbytes:
        raise CudaIpcError("a CUDA IPC descriptor claims more bytes than its block")
    return _raw(block)


_own = weakref.WeakValueDictionary()
_opened = weakref.WeakValueDictionary()
