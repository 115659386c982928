"""CUDA's start, overlapped with `import torch` in the judge process.

A fresh judge spends ~3 s importing torch, then ~2 s starting CUDA (the driver and the device's
primary context) on its first CUDA call; both are on the path of a one-shot `kernelevo verify`.
The driver's start needs no torch: a thread makes it through ctypes (whose calls release the GIL)
while the main thread imports torch, and torch's runtime then finds the primary context already
made. Where there is no driver, no visible GPU or the call fails, nothing happens and torch
starts CUDA itself as before.
"""

from __future__ import annotations

import ctypes
import os
import threading

_started: threading.Thread | None = None


def _retain_primary_context() -> None:
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return
    device, context = ctypes.c_int(), ctypes.c_void_p()
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGet(ctypes.byref(device), 0) != 0:
        return
    cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)


def start_cuda_early() -> threading.Thread | None:
    """Start CUDA on a daemon thread, once, unless this process has no GPU to use (a CPU worker
    hides every device); the thread is returned for a caller that wants to wait for it."""
    global _started
    if _started is None and os.environ.get("CUDA_VISIBLE_DEVICES", "unset") != "":
        _started = threading.Thread(
            target=_retain_primary_context, name="kernelevo-cuda-start", daemon=True
        )
        _started.start()
    return _started
