"""How load_inline lays out a candidate's sources, and checking them without a GPU.

torch writes `main.cpp` (an include, the C++ sources, generated bindings) and `cuda.cu`
(three includes, the CUDA sources); compiler errors name those files, so they are mapped
back to lines of the candidate's strings. The compile-only check compiles the same
files with torch's flags: `nvcc -cubin` for sm_90 (the full front end, host code
included, and device code; skipping the host compile of `-c` saves 3-4x) and
`g++ -fsyntax-only`. Headers of CUDA libraries a CPU machine lacks (cuBLAS, cuSPARSE,
cuSOLVER, which ATen/cuda/CUDAContext.h pulls in) get stand-ins; code that really uses
those libraries is reported as unchecked rather than broken.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shlex
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kernelevo.backends.nvcc import (
    CudaCompileError,
    compile_error,
    find_nvcc,
    parse_errors,
    run_limited,
)

COMPILE_ONLY_ARCH = "sm_90"

# Headers of CUDA libraries torch's CUDA headers include (ATen/cuda/CUDAContext.h) but a
# machine with only nvcc lacks. Stand-ins declare the handle and status types torch needs.
SHIMS = {
    "c10/cuda/impl/cuda_cmake_macros.h": "#define C10_CUDA_BUILD_SHARED_LIBS\n",
    "cublas_v2.h": "typedef struct cublasContext* cublasHandle_t;\n"
    "typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;\n",
    "cublasLt.h": "typedef struct cublasLtContext* cublasLtHandle_t;\n",
    "cusparse.h": "typedef struct cusparseContext* cusparseHandle_t;\n"
    "typedef enum { CUSPARSE_STATUS_SUCCESS = 0 } cusparseStatus_t;\n",
    "cusolver_common.h": "typedef enum { CUSOLVER_STATUS_SUCCESS = 0, CUSOLVER_STATUS_INVALID_VALUE = 3 } "
    "cusolverStatus_t;\n",
    "cusolverDn.h": "#include <cusolver_common.h>\ntypedef struct cusolverDnContext* cusolverDnHandle_t;\n",
}
_LIBRARY_WORDS = re.compile(
    r"cublas|cusparse|cusolver|cudss|curand|cufft|cudnn|nccl|nvml", re.IGNORECASE
)


def as_list(v: Any) -> list[str]:
    if v is None:
        return []
    return [v] if isinstance(v, str) else list(v)


def function_names(a: dict[str, Any]) -> list[str]:
    f = a.get("functions")
    if f is None:
        return []
    return [f] if isinstance(f, str) else list(f)


def offsets(a: dict[str, Any]) -> dict[str, tuple[str, int, int]]:
    """Where the candidate's own lines sit in the files torch writes (main.cpp, cuda.cu)."""
    implicit = not a.get("no_implicit_headers", False)
    cpp, cuda = as_list(a.get("cpp_sources")), as_list(a.get("cuda_sources"))
    out = {
        "main.cpp": (
            "cpp_sources",
            1 if implicit else 0,
            "\n".join(cpp).count("\n") + 1 if cpp else 0,
        )
    }
    if cuda:
        out["cuda.cu"] = ("cuda_sources", 3 if implicit else 0, "\n".join(cuda).count("\n") + 1)
    return out


def map_lines(message: str, where: dict[str, tuple[str, int, int]]) -> str:
    """`cuda.cu:15:` -> `cuda_sources:12:` where the line is the candidate's, else unchanged."""

    def sub(m: re.Match) -> str:
        label, off, n = where.get(m[1], (None, 0, 0))
        line = int(m[2])
        return f"{label}:{line - off}" if label and off < line <= off + n else m[0]

    return re.sub(r"(?<![\w/.])(main\.cpp|cuda\.cu):(\d+)(?=:)", sub, message)


def mapped(err: CudaCompileError, where: dict[str, tuple[str, int, int]]) -> CudaCompileError:
    msg = map_lines(str(err), where)
    return type(err)(msg, log=err.log, errors=parse_errors(msg) if err.errors else [])


def _compose(a: dict[str, Any]) -> tuple[str, str | None]:
    """main.cpp and cuda.cu exactly as load_inline writes them."""
    implicit = not a.get("no_implicit_headers", False)
    cpp = (["#include <torch/extension.h>"] if implicit else []) + as_list(a.get("cpp_sources"))
    functions = a.get("functions")
    if functions is not None:
        if isinstance(functions, str):
            functions = [functions]
        if isinstance(functions, list):
            functions = {f: f for f in functions}
        cpp.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
        for fname, doc in functions.items():
            target = (
                f"torch::wrap_pybind_function({fname})"
                if a.get("with_pytorch_error_handling", True)
                else fname
            )
            cpp.append(f'm.def("{fname}", {target}, "{doc}");')
        cpp.append("}")
    cuda = as_list(a.get("cuda_sources"))
    cu = None
    if cuda:
        head = (
            ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
            if implicit
            else []
        )
        cu = "\n".join(head + cuda)
    return "\n".join(cpp), cu


def _flags(v: Any) -> list[str]:
    return [x for f in (v or []) for x in shlex.split(str(f))]


def _system_includes(with_cuda: bool, nvcc: str | None) -> list[str]:
    import torch.utils.cpp_extension as ext

    paths = list(ext.include_paths())
    if with_cuda or nvcc:
        with contextlib.suppress(OSError, TypeError):
            paths = list(ext.include_paths("cuda"))
        if nvcc:
            paths.append(str(Path(nvcc).resolve().parent.parent / "include"))
    for site in sys.path:
        paths += sorted(glob.glob(os.path.join(site, "nvidia", "*", "include")))
    py = sysconfig.get_path("include")
    if py:
        paths.append(py)
    seen: list[str] = []
    for p in paths:
        if p and os.path.isdir(p) and p not in seen:
            seen.append(p)
    return seen


def _write_shims(root: Path, includes: list[str]) -> list[str]:
    written = []
    for rel, text in SHIMS.items():
        if not any(os.path.exists(os.path.join(d, rel)) for d in includes):
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("#pragma once\n" + text)
            written.append(rel)
    return written


def check_sources(a: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Compile what load_inline would build; raise CudaCompileError, else return facts for the record."""
    main_cpp, cuda_cu = _compose(a)
    name = re.sub(r"\W", "_", str(a["name"]))
    nvcc = find_nvcc() if cuda_cu is not None else None
    includes = _system_includes(bool(cuda_cu) or bool(a.get("with_cuda")), nvcc)
    user = [os.path.abspath(p) for p in as_list(a.get("extra_include_paths"))]
    facts: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="kernelevo-inline-") as tmp:
        shim_dir = Path(tmp, "shims")
        shims = _write_shims(shim_dir, includes + user)
        facts["shims"] = shims
        inc = [f"-I{p}" for p in user] + [
            x for p in includes + ([str(shim_dir)] if shims else []) for x in ("-isystem", p)
        ]
        common = [f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H", *inc]
        Path(tmp, "main.cpp").write_text(main_cpp)
        cflags = _flags(a.get("extra_cflags"))
        std = [] if any(f.startswith("-std=") for f in cflags) else ["-std=c++17"]
        jobs = [
            (
                "g++ -fsyntax-only main.cpp",
                [
                    os.environ.get("CXX", "c++"),
                    "-fsyntax-only",
                    "-fPIC",
                    *std,
                    *common,
                    *cflags,
                    "main.cpp",
                ],
            )
        ]
        if cuda_cu is not None:
            assert nvcc is not None
            Path(tmp, "cuda.cu").write_text(cuda_cu)
            jobs.append(
                ("nvcc -cubin cuda.cu", _nvcc_cmd(nvcc, common, _flags(a.get("extra_cuda_cflags"))))
            )
        deadline = time.monotonic() + timeout
        with ThreadPoolExecutor(len(jobs)) as pool:
            futures = [
                (
                    what,
                    pool.submit(
                        run_limited,
                        cmd,
                        cwd=tmp,
                        what=what,
                        timeout=max(deadline - time.monotonic(), 0.1),
                    ),
                )
                for what, cmd in jobs
            ]
            results = [(what, f.result()) for what, f in futures]
        failures = [(what, r.output) for what, r in results if r.returncode != 0]
        if failures:
            errors = [
                compile_error(
                    out, header=f"{what} failed:", strip_prefixes=[tmp, os.path.realpath(tmp)]
                )
                for what, out in failures
            ]
            message = "\n".join(str(e) for e in errors)
            unchecked = _missing_library(message, shims)
            if unchecked is None:
                err = CudaCompileError(
                    f"load_inline extension '{a['name']}' does not compile:\n{message}",
                    log="\n".join(out for _, out in failures),
                )
                raise mapped(err, offsets(a))
            facts["unchecked"] = unchecked
    return facts


_ARCH_FLAG = re.compile(r"-(arch|gencode|code)\b|--gpu-architecture|--gpu-code|--generate-code")


def _nvcc_cmd(nvcc: str, common: list[str], extra: list[str]) -> list[str]:
    """`nvcc -cubin` for sm_90 with torch's flags: the full front end (host code included) and
    the device back end, without the host compile that makes `-c` 3-4x slower."""
    import torch.utils.cpp_extension as ext

    kept, skip = [], False
    for f in extra:
        if skip:
            skip = False
        elif _ARCH_FLAG.match(f):
            skip = "=" not in f and f in (
                "-arch",
                "-gencode",
                "-code",
                "--gpu-architecture",
                "--gpu-code",
                "--generate-code",
            )
        elif f in ("-c", "-cubin", "--cubin"):
            continue
        else:
            kept.append(f)
    sm = (os.environ.get("KERNELEVO_CUDA_ARCH") or COMPILE_ONLY_ARCH).lower().split("_", 1)[-1]
    std = [] if any(f.startswith("-std=") for f in kept) else ["-std=c++17"]
    return [
        nvcc,
        "-cubin",
        "-o",
        "cuda.cubin",
        *common,
        *getattr(ext, "COMMON_NVCC_FLAGS", []),
        f"-gencode=arch=compute_{sm.rstrip('af')},code=sm_{sm}",
        *kept,
        *std,
        "cuda.cu",
    ]


def _missing_library(message: str, shims: list[str]) -> str | None:
    """A reason the check is incomplete, when every error is about a CUDA library absent here."""
    lines = [
        x
        for x in message.splitlines()
        if re.search(r"error", x, re.IGNORECASE)
        and not re.match(r"^\d+ errors? detected", x)
        and not x.endswith("failed:")
    ]
    if not lines:
        return None
    missing = re.compile(r"(?:fatal error: |cannot open source file \")([\w/.+-]+)")
    reasons = set()
    for line in lines:
        m = missing.search(line)
        if m and _LIBRARY_WORDS.search(m[1]):
            reasons.add(f"header {m[1]} is not on this machine")
        elif shims and _LIBRARY_WORDS.search(line):
            reasons.add("uses a CUDA library API whose headers are not on this machine")
        else:
            return None
    return "; ".join(sorted(reasons))
