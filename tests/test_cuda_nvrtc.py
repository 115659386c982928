"""NVRTC on the CPU machine (it needs no GPU and no driver): the CUDA fast path compiles with it
first, and goes to nvcc for what it cannot do (host headers, nvcc-only flags, errors)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kernelevo import cuda
from kernelevo.backends import cubin, nvcc, nvrtc

ADD = r"""
extern "C" __global__ void add(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}
"""
HOST_HEADER = r"""
#include <cstdint>
extern "C" __global__ void fill(uint32_t* y) { y[threadIdx.x] = 7u; }
"""


def _has_nvcc() -> bool:
    try:
        nvcc.find_nvcc()
        return True
    except cuda.CudaUnavailable:
        return False


pytestmark = pytest.mark.skipif(
    nvrtc.version() is None, reason="no NVRTC (pip install cuda-bindings nvidia-cuda-nvrtc)"
)
needs_nvcc = pytest.mark.skipif(not _has_nvcc(), reason="nvcc not installed")


def unique(src: str) -> str:
    return f"// {uuid.uuid4().hex}\n{src}"


@pytest.fixture
def compile_only(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELEVO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELEVO_NVCC_TIMEOUT", raising=False)
    monkeypatch.delenv("KERNELEVO_CUDA_ARCH", raising=False)
    cuda.set_compile_only(True)
    yield tmp_path / "cache" / "cuda"
    cuda.set_compile_only(None)


def no_nvcc(*a, **k):
    raise AssertionError("nvcc ran")


def no_nvrtc(*a, **k):
    raise AssertionError("NVRTC ran")


def test_a_plain_kernel_compiles_with_nvrtc_and_nvcc_never_runs(compile_only, monkeypatch):
    monkeypatch.setattr(cubin, "run_limited", no_nvcc)
    mod = cuda.compile(unique(ADD))
    assert mod.compiler == "nvrtc" and mod.arch == "sm_90"
    assert mod.cubin[:4] == b"\x7fELF" and mod.kernel_names == ["add"]
    assert mod.add.param_sizes == [8, 8, 8, 4]
    assert len(list(compile_only.glob("*.cubin"))) == 1


def test_host_only_flags_are_dropped_and_toolkit_headers_found(compile_only, monkeypatch):
    if not nvrtc.include_dirs():
        pytest.skip("no CUDA toolkit headers here")
    monkeypatch.setattr(cubin, "run_limited", no_nvcc)
    src = unique(
        '#include <cuda_fp16.h>\nextern "C" __global__ void h(__half* y) { y[0] = y[1]; }\n'
    )
    mod = cuda.compile(src, options=["-O3", "--use_fast_math"])
    assert mod.compiler == "nvrtc" and mod.kernel_names == ["h"]
    assert mod.h.param_sizes == [8]


def test_the_c_library_constants_nvcc_gives_every_source_compile_with_nvrtc(
    compile_only, monkeypatch
):
    monkeypatch.setattr(cubin, "run_limited", no_nvcc)
    src = unique(
        'extern "C" __global__ void c(float* y) {\n'
        "    y[0] = -INFINITY; y[1] = NAN; y[2] = FLT_MAX; y[3] = M_PI; y[4] = INT_MIN;\n}\n"
    )
    assert cuda.compile(src).compiler == "nvrtc"


@needs_nvcc
def test_infinity_in_a_constant_expression_goes_to_nvcc(compile_only):
    src = unique(
        "__device__ constexpr float kNegInf = -INFINITY;\n"
        'extern "C" __global__ void c(float* y) { y[0] = kNegInf; }\n'
    )
    assert cuda.compile(src).compiler == "nvcc"


@needs_nvcc
def test_host_header_goes_to_nvcc_and_the_cache_remembers(compile_only, monkeypatch):
    src = unique(HOST_HEADER)
    mod = cuda.compile(src)
    assert mod.compiler == "nvcc" and mod.kernel_names == ["fill"]
    assert len(list(compile_only.glob("*.nvcc"))) == 1  # NVRTC could not, nvcc could
    monkeypatch.setattr(cubin, "run_limited", no_nvcc)
    monkeypatch.setattr(nvrtc, "compile_cubin", no_nvrtc)
    again = cuda.compile(src)
    assert again.compiler == "nvcc" and again.cubin == mod.cubin


@needs_nvcc
def test_an_nvcc_only_flag_goes_to_nvcc(compile_only):
    mod = cuda.compile(unique(ADD), options=["--expt-relaxed-constexpr"])
    assert mod.compiler == "nvcc" and mod.kernel_names == ["add"]


@needs_nvcc
def test_with_nvcc_a_broken_source_gets_nvccs_verdict(compile_only):
    src = 'extern "C" __global__ void k(float* y) {\n    y[0] = undefined_thing;\n}\n'
    with pytest.raises(cuda.CudaCompileError, match="nvcc failed") as info:
        cuda.compile(src)
    assert "kernel.cu:2: error" in str(info.value)
    assert not list(compile_only.glob("*.nvcc"))  # nothing compiled: nothing to remember


def test_without_nvcc_nvrtc_names_the_line(compile_only, monkeypatch):
    def missing() -> str:
        raise cuda.CudaUnavailable("nvcc not found")

    monkeypatch.setattr(cubin, "find_nvcc", missing)
    src = (
        'extern "C" __global__ void k(float* y) {\n    float v = 1.0f\n    y[threadIdx.x] = v;\n}\n'
    )
    with pytest.raises(cuda.CudaCompileError, match="NVRTC failed") as info:
        cuda.compile(src)
    msg = str(info.value)
    assert "kernel.cu:3: error" in msg and "warning" not in msg.lower()
    assert info.value.errors and info.value.errors[0][:2] == ("kernel.cu", 3)
    assert cuda.compile(unique(ADD)).compiler == "nvrtc"  # compile-only needs no toolkit


def test_nvrtc_time_limit(compile_only, monkeypatch):
    monkeypatch.setenv("KERNELEVO_NVCC_TIMEOUT", "0.0001")
    monkeypatch.setattr(cubin, "run_limited", no_nvcc)
    with pytest.raises(cuda.CudaCompileTimeout, match=r"NVRTC \(sm_90\) ran past"):
        cuda.compile(unique(ADD))


def test_cache_keys_of_the_two_compilers_differ(compile_only):
    key_nvrtc = cuda.compile(unique(ADD)).key
    assert not key_nvrtc.startswith(cuda.cache_key(ADD, ["-lineinfo"], "sm_90", "nvcc"))
    assert (compile_only / f"{key_nvrtc}.cubin").exists()


@needs_nvcc
def test_without_cuda_bindings_nvcc_compiles_as_before(tmp_path):
    code = (
        "import sys; sys.modules['cuda.bindings.nvrtc'] = None\n"
        "from kernelevo import cuda; from kernelevo.backends import nvrtc\n"
        "cuda.set_compile_only(True)\n"
        f"m = cuda.compile({ADD!r}); print(nvrtc.version(), m.compiler, m.kernel_names)\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root, "KERNELEVO_CACHE": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.stdout.split() == ["None", "nvcc", "['add']"], out.stderr


def test_without_a_driver_the_launcher_says_so_in_one_line():
    import ctypes

    from kernelevo.backends import cuda_driver

    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("a CUDA driver is installed here")
    except OSError:
        pass
    with pytest.raises(cuda.CudaUnavailable, match=r"no CUDA driver \(libcuda\.so\.1\)"):
        cuda_driver.driver()
