"""The cubin for a CUDA source: NVRTC where it can, nvcc where it cannot, cached on disk by a
content hash of everything that shapes it (source, flags, target, compiler and version), so a
re-run or a fresh process loads it in milliseconds. Importing this module is cheap: no torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kernelevo.atomic_write import write_atomic
from kernelevo.backends import nvrtc
from kernelevo.backends.nvcc import (
    DEFAULT_TIMEOUT_S,
    CudaUnavailable,
    cache_dir,
    compile_error,
    find_nvcc,
    nvcc_version,
    run_limited,
    timeout_from_env,
)

_FORMAT = 2  # bump when the cubin cache layout or compile command changes


def cache_key(source: str, options: Sequence[str], arch: str, compiler: str) -> str:
    """The cubin's name: everything that shapes it, the compiler and its version included."""
    blob = json.dumps([_FORMAT, source, list(options), arch, compiler], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def build_cubin(source: str, opts: list[str], arch: str) -> tuple[str, bytes, str]:
    """(cache key, cubin, compiler): NVRTC where it can, else nvcc; cached by content hash.

    A source NVRTC cannot compile (host headers, an nvcc-only flag, or an error) goes to nvcc,
    whose verdict and error text stand; one that NVRTC could not but nvcc could is marked, so
    its cache hits skip NVRTC.
    """
    timeout = timeout_from_env("KERNELEVO_NVCC_TIMEOUT", DEFAULT_TIMEOUT_S)
    folder = cache_dir("cuda")
    refused: nvrtc.NvrtcCannot | None = None
    marker: Path | None = None
    if nvrtc.version() is not None:
        key = cache_key(source, opts, arch, nvrtc.identity())
        data = _read(folder / f"{key}.cubin")
        if data:
            return key, data, "nvrtc"
        marker = folder / f"{key}.nvcc"  # NVRTC could not compile it, nvcc could
        if not marker.exists():
            try:
                data = nvrtc.compile_cubin(source, opts, arch, timeout)
            except nvrtc.NvrtcCannot as e:
                refused = e
            else:
                _write(folder / f"{key}.cubin", data)
                return key, data, "nvrtc"
    try:
        nvcc = find_nvcc()
    except CudaUnavailable:
        if refused is not None and refused.log:
            raise compile_error(
                refused.log, header=f"NVRTC failed compiling kernel.cu for {arch}:"
            ) from None
        raise
    key_nvcc, data = _nvcc_cubin(nvcc, source, opts, arch, timeout)
    if refused is not None and marker is not None:
        _write(marker, b"")
    return key_nvcc, data, "nvcc"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _write(path: Path, data: bytes) -> None:
    write_atomic(path, data)


def _nvcc_cubin(
    nvcc: str, source: str, opts: list[str], arch: str, timeout: float
) -> tuple[str, bytes]:
    key = cache_key(source, opts, arch, nvcc_version(nvcc))
    path = cache_dir("cuda") / f"{key}.cubin"
    data = _read(path)
    if data:
        return key, data
    with tempfile.TemporaryDirectory(prefix="kernelevo-nvcc-") as tmp:
        Path(tmp, "kernel.cu").write_text(source)
        cmd = [nvcc, "-cubin", f"-arch={arch}", *opts, "-o", "kernel.cubin", "kernel.cu"]
        res = run_limited(cmd, cwd=tmp, timeout=timeout, what=f"nvcc ({arch})")
        if res.returncode != 0:
            header = f"nvcc failed (exit {res.returncode}) compiling kernel.cu for {arch}:"
            raise compile_error(
                res.output, header=header, strip_prefixes=[tmp, os.path.realpath(tmp)]
            )
        data = Path(tmp, "kernel.cubin").read_bytes()
    _write(path, data)
    return key, data
