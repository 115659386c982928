"""NVRTC, NVIDIA's runtime compiler, through `cuda.bindings.nvrtc`: CUDA C++ to a cubin in the
calling process in ~0.05 s, where an nvcc run costs 0.5-0.9 s of process start-up and temporary
files. It needs no GPU and no driver, so the CPU-only compile checks use it too.

NVRTC compiles device code only and has no host headers (`<cstdint>`, `<vector>`) and not every
nvcc flag (`-Xcompiler`, `--expt-relaxed-constexpr`): for those `NvrtcCannot` is raised and the
caller compiles with nvcc, as before. The toolkit's own include folders are on the search path,
so `cuda_fp16.h`, `mma.h`, `cooperative_groups.h` and `cuda/std/*` work as under nvcc.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelevo.backends.nvcc import CudaCompileTimeout, CudaUnavailable, find_nvcc

SOURCE_NAME = "kernel.cu"
PRELUDE_NAME = "kernelevo_nvrtc_prelude.h"
# nvcc includes cuda_runtime.h, and with it the C library's math.h and limits.h, in every
# source; NVRTC has none of them. The constants kernels use most, with the same values (INFINITY
# and NAN as device intrinsics: in a constant expression NVRTC fails and nvcc compiles). float.h's
# FLT_* are here too although nvcc needs <cfloat> for them (seen on the H200).
PRELUDE = "".join(
    f"#ifndef {name}\n#define {name} {value}\n#endif\n"
    for name, value in (
        ("INFINITY", "__int_as_float(0x7f800000)"),
        ("HUGE_VALF", "__int_as_float(0x7f800000)"),
        ("NAN", "__int_as_float(0x7fc00000)"),
        ("FLT_MAX", "3.40282346638528859811704183484516925e+38F"),
        ("FLT_MIN", "1.17549435082228750796873653722224568e-38F"),
        ("FLT_EPSILON", "1.19209289550781250000000000000000000e-7F"),
        ("DBL_MAX", "((double)1.79769313486231570814527423731704357e+308L)"),
        ("INT_MAX", "2147483647"),
        ("INT_MIN", "(-INT_MAX - 1)"),
        ("UINT_MAX", "4294967295U"),
        ("M_E", "2.7182818284590452354"),
        ("M_LOG2E", "1.4426950408889634074"),
        ("M_LN2", "0.69314718055994530942"),
        ("M_PI", "3.14159265358979323846"),
        ("M_PI_2", "1.57079632679489661923"),
        ("M_2_PI", "0.63661977236758134308"),
        ("M_2_SQRTPI", "1.12837916709551257390"),
        ("M_SQRT2", "1.41421356237309504880"),
        ("M_SQRT1_2", "0.70710678118654752440"),
    )
)
# nvcc's -O levels set the host compiler's optimisation; device code is optimised either way.
_HOST_ONLY = re.compile(r"-O[0-3]?$")


class NvrtcCannot(Exception):
    """NVRTC is missing here or rejected the source or an option; `log` is what it said."""

    def __init__(self, reason: str, log: str = "") -> None:
        super().__init__(reason)
        self.log = log


@functools.lru_cache(maxsize=1)
def _nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise NvrtcCannot(f"cuda.bindings is not installed ({e})") from None
    try:
        err, _, _ = nvrtc.nvrtcVersion()
    except RuntimeError as e:  # the library itself could not be loaded
        raise NvrtcCannot(f"no NVRTC library ({e})") from None
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise NvrtcCannot(f"NVRTC is unusable: {err.name}")
    return nvrtc


@functools.lru_cache(maxsize=1)
def version() -> str | None:
    """e.g. 'nvrtc 13.0 (nvidia-cuda-nvrtc 13.0.88)'; None without NVRTC."""
    try:
        nvrtc = _nvrtc()
    except NvrtcCannot:
        return None
    _, major, minor = nvrtc.nvrtcVersion()
    text = f"nvrtc {major}.{minor}"
    for dist in (f"nvidia-cuda-nvrtc-cu{major}", "nvidia-cuda-nvrtc"):
        try:
            return f"{text} ({dist} {importlib.metadata.version(dist)})"
        except importlib.metadata.PackageNotFoundError:
            continue
    return text


@functools.lru_cache(maxsize=1)
def include_dirs() -> tuple[str, ...]:
    """The CUDA toolkit's include folders ($CUDA_HOME's, nvcc's, /usr/local/cuda's: the first
    that holds cuda_fp16.h), as real paths: a new toolkit behind the /usr/local/cuda link changes
    them, and with them the cache key."""
    roots: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(Path(os.environ[var]))
    with contextlib.suppress(CudaUnavailable, OSError):
        roots.append(Path(find_nvcc()).resolve().parent.parent)
    roots.append(Path("/usr/local/cuda"))
    for root in roots:
        include = root / "include"
        if (include / "cuda_fp16.h").is_file():
            found = [include, include / "cccl"]
            return tuple(str(d.resolve()) for d in found if d.is_dir())
    return ()


def identity() -> str:
    """What the cache key needs to know of this compiler: version, toolkit headers, prelude."""
    prelude = hashlib.sha256(PRELUDE.encode()).hexdigest()[:12]
    return f"{version()} {include_dirs()} prelude {prelude}"


def options_for_nvrtc(options: Sequence[str], arch: str) -> list[str]:
    """nvcc's flags as NVRTC takes them: the target, the toolkit headers, host-only flags dropped."""
    kept = [o for o in options if not _HOST_ONLY.match(o)]
    includes = [f"-I{d}" for d in include_dirs()]
    return [f"-arch={arch}", "-include", PRELUDE_NAME, *includes, *kept]


def compile_cubin(source: str, options: Sequence[str], arch: str, timeout: float) -> bytes:
    """The cubin for `arch` (e.g. 'sm_90'); NvrtcCannot when NVRTC failed (the log says why).

    The compile runs on a thread of its own (NVRTC releases the GIL) so that the time limit
    holds; a compile past it is left to finish in the background while CudaCompileTimeout is
    raised (the per-candidate process ends soon after).
    """
    nvrtc = _nvrtc()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = _compile(nvrtc, source, options_for_nvrtc(options, arch))
        except BaseException as e:
            box["error"] = e

    worker = threading.Thread(target=run, name="nvrtc-compile", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise CudaCompileTimeout(
            f"NVRTC ({arch}) ran past its {timeout:g} s time limit", log="", errors=[]
        )
    if "error" in box:
        raise box["error"]
    result: bytes = box["result"]
    return result


def _compile(nvrtc: Any, source: str, options: list[str]) -> bytes:
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    err, prog = nvrtc.nvrtcCreateProgram(
        source.encode(), SOURCE_NAME.encode(), 1, [PRELUDE.encode()], [PRELUDE_NAME.encode()]
    )
    if err != ok:
        raise NvrtcCannot(f"nvrtcCreateProgram failed: {err.name}")
    try:
        raw = [o.encode() for o in options]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(raw), raw)
        log = _log(nvrtc, prog)
        if status != ok:
            raise NvrtcCannot(f"NVRTC could not compile {SOURCE_NAME}: {status.name}", log)
        err, size = nvrtc.nvrtcGetCUBINSize(prog)
        if err != ok or size == 0:
            raise NvrtcCannot(f"NVRTC made no cubin ({err.name})", log)
        cubin = bytearray(size)
        (err,) = nvrtc.nvrtcGetCUBIN(prog, cubin)
        if err != ok:
            raise NvrtcCannot(f"nvrtcGetCUBIN failed: {err.name}", log)
        return bytes(cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _log(nvrtc: Any, prog: Any) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    buf = bytearray(size)
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return bytes(buf).rstrip(b"\0").decode(errors="replace")
