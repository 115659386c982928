"""What the runner host loads once before it forks any candidate process, so that each child
inherits it instead of paying for it inside its verdict: torch, Triton and what a first launch
imports, Triton's source hash, the op recorder's machinery. CUDA is never started here (a forked
child could not use it), and NVML is left uninitialised.
"""

from __future__ import annotations

import contextlib
import importlib
import os

from kernelevo.worker import protocol


def hash_triton() -> None:
    """Triton keys its compile cache by a hash of its own sources and libtriton (~0.5 s, once per
    process, at the first launch even when the kernel is cached). Computed here, from files only
    (no CUDA), every forked candidate inherits it instead of paying it inside its verdict; where
    the judge stored it for this Triton (worker/triton_key.py), not even computed."""
    from kernelevo.worker.triton_key import use_stored

    if use_stored():
        return
    for where in ("triton.runtime.cache", "triton.compiler.compiler"):
        try:
            key = importlib.import_module(where).triton_key
        except (ImportError, AttributeError):
            continue
        with contextlib.suppress(OSError):
            key()
        return


def preload() -> None:
    """What every candidate would import, loaded once here (forked children share it)."""
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    import torch

    protocol.mark("torch")
    import triton
    import triton.language  # noqa: F401

    protocol.mark("triton")
    hash_triton()
    with contextlib.suppress(ImportError):  # a launch's argument specialization imports it
        importlib.import_module("triton.experimental.gluon")  # (0.13 s in each fresh child)
    import torch.utils.cpp_extension  # every load guards its load_inline (0.13 s in a child)

    protocol.mark("triton_key")
    from kernelevo.checks.opwatch import OpRecorder
    from kernelevo.worker.lazy_dynamo import defer_dynamo_import

    defer_dynamo_import()  # else the first dispatch mode imports torch._dynamo (4-6 s on the H200)
    with OpRecorder():  # what the dispatch-mode machinery still loads on first use
        torch.ones(2) + 1
    protocol.mark("op_recorder")
    from kernelevo.backends.nvcc import CudaUnavailable, nvcc_version

    # nvcc's version only: NVRTC's bindings load cuda.bindings.driver, and CUDA touched before
    # the fork leaves every child unable to start it ("CUDA driver initialization failed")
    with contextlib.suppress(CudaUnavailable, OSError):
        nvcc_version()
    protocol.mark("nvcc_version")
    triton_host_facts()
    release_nvml()


def triton_host_facts() -> None:
    """Facts Triton looks up by subprocess at a candidate's first launch and then caches for the
    process (the platform's `file` probe, ptxas's version: ~13 ms of each verdict on an H100),
    looked up here from files only, so every forked child inherits them."""
    with contextlib.suppress(Exception):
        from triton.runtime.build import platform_key

        platform_key()
    with contextlib.suppress(Exception):
        from triton.backends.nvidia.compiler import get_ptxas_version

        get_ptxas_version()


def release_nvml() -> None:
    """Leave NVML uninitialised before forking. torch's NVML-based device count (which keeps CUDA
    out of this process) initialises it; a child, whose inherited descriptors are closed, then
    cannot initialise it again, and torch's out-of-memory report asserts on that instead of
    raising OutOfMemoryError (seen on the H200)."""
    import ctypes

    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1", mode=os.RTLD_NOLOAD)  # only where already loaded
    except OSError:
        return
    for _ in range(64):  # one shutdown per init; NVML_ERROR_UNINITIALIZED (1) once none is left
        if nvml.nvmlShutdown() != 0:
            return
