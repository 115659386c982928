"""The CUDA fast path without a GPU: compile-only mode, argument rules, cache keys, nvcc limits,
and NVRTC (which needs no GPU or driver) with its fall back to nvcc."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from kernelevo import cuda
from kernelevo.backends import cubin, nvcc, nvrtc


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python that must import this checkout's kernelevo."""
    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH", "")) if x)
    return {**os.environ, "PYTHONPATH": path, **extra}


ADD = r"""
extern "C" __global__ void add(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}
"""


def _has_nvcc() -> bool:
    try:
        nvcc.find_nvcc()
        return True
    except cuda.CudaUnavailable:
        return False


needs_nvcc = pytest.mark.skipif(not _has_nvcc(), reason="nvcc not installed")
needs_nvrtc = pytest.mark.skipif(
    nvrtc.version() is None, reason="no NVRTC (pip install cuda-bindings nvidia-cuda-nvrtc)"
)


@pytest.fixture
def compile_only(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELEVO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELEVO_NVCC_TIMEOUT", raising=False)
    monkeypatch.delenv("KERNELEVO_CUDA_ARCH", raising=False)
    cuda.set_compile_only(True)
    yield tmp_path / "cache"
    cuda.set_compile_only(None)


def unique(src: str) -> str:
    return f"// {uuid.uuid4().hex}\n{src}"


@needs_nvcc
def test_compile_only_compiles_a_good_kernel_and_records_it(compile_only):
    mod = cuda.compile(ADD)
    assert mod.kernel_names == ["add"]
    assert mod.arch == "sm_90" and mod.device is None
    assert mod.cubin[:4] == b"\x7fELF"
    assert ADD in cuda.compiled_sources()
    assert list((compile_only / "cuda").glob("*.cubin"))
    assert mod.add.param_sizes == [8, 8, 8, 4]


@needs_nvcc
def test_second_compile_is_a_disk_cache_hit(compile_only, monkeypatch):
    src = unique(ADD)
    cuda.compile(src)

    def no_compiler(*a, **k):
        raise AssertionError("a compiler ran on a cache hit")

    monkeypatch.setattr(cubin, "run_limited", no_compiler)
    monkeypatch.setattr(nvrtc, "compile_cubin", no_compiler)
    t = time.perf_counter()
    cuda.compile(src)
    assert time.perf_counter() - t < 0.1


@needs_nvcc
def test_syntax_error_gives_compile_error_naming_the_line(compile_only):
    src = (
        'extern "C" __global__ void k(float* y) {\n    float v = 1.0f\n    y[threadIdx.x] = v;\n}\n'
    )
    with pytest.raises(cuda.CudaCompileError) as info:
        cuda.compile(src)
    msg = str(info.value)
    assert "kernel.cu:3: error" in msg
    assert info.value.errors and info.value.errors[0][:2] == ("kernel.cu", 3)
    assert "/tmp" not in msg and "kernelevo-nvcc-" not in msg
    assert "warning" not in msg.lower()
    assert src not in cuda.compiled_sources()


@needs_nvcc
def test_ptxas_error_is_reported(compile_only):
    src = (
        'extern "C" __global__ void big(float* y) {\n  __shared__ float s[20000];\n  s[threadIdx.x] = 1;\n'
        "  __syncthreads();\n  y[threadIdx.x] = s[threadIdx.x ^ 1];\n}\n"
    )
    with pytest.raises(cuda.CudaCompileError, match="too much shared data"):
        cuda.compile(src)


@needs_nvcc
def test_launch_in_compile_only_mode_raises_not_run(compile_only):
    import torch

    mod = cuda.compile(ADD)
    x = torch.ones(8)
    before = cuda.launch_count()
    with pytest.raises(cuda.CudaUnavailable, match="compiled, not run"):
        mod.add(x, x, x, np.int32(8), grid=(1,), block=(32,))
    assert cuda.launch_count() == before


@needs_nvcc
def test_compile_only_launch_still_checks_arguments(compile_only):
    import torch

    mod = cuda.compile(ADD)
    x = torch.ones(8)
    with pytest.raises(TypeError, match=r"np\.int32"):
        mod.add(x, x, x, 8, grid=(1,), block=(32,))
    with pytest.raises(TypeError, match="takes 4 arguments, 3 were given"):
        mod.add(x, x, x, grid=(1,), block=(32,))
    with pytest.raises(TypeError, match="4 bytes"):
        mod.add(x, x, x, np.int64(8), grid=(1,), block=(32,))
    with pytest.raises(ValueError, match="block"):
        mod.add(x, x, x, np.int32(8), grid=(1,), block=(2048,))


@needs_nvcc
def test_missing_kernel_and_mangled_name_hint(compile_only):
    mod = cuda.compile(ADD)
    with pytest.raises(AttributeError, match=r"no kernel 'sub'.*kernels: add"):
        _ = mod.sub
    mangled = cuda.compile("__global__ void k(float* y) { y[0] = 1.0f; }\n")
    with pytest.raises(AttributeError, match='extern "C"'):
        _ = mangled.k


@needs_nvcc
def test_env_var_turns_compile_only_on(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELEVO_CACHE", str(tmp_path))
    cuda.set_compile_only(None)
    monkeypatch.setenv("KERNELEVO_CUDA_COMPILE_ONLY", "1")
    assert cuda.compile_only()
    assert cuda.compile(ADD).device is None
    monkeypatch.setenv("KERNELEVO_CUDA_COMPILE_ONLY", "0")
    assert not cuda.compile_only()
    cuda.set_compile_only(True)
    assert cuda.compile_only()
    cuda.set_compile_only(None)


@needs_nvcc
def test_compile_only_arch_from_env_and_argument(compile_only, monkeypatch):
    monkeypatch.setenv("KERNELEVO_CUDA_ARCH", "sm_80")
    assert cuda.compile(ADD).arch == "sm_80"
    assert cuda.compile(ADD, arch="90a").arch == "sm_90a"
    with pytest.raises(ValueError, match="arch"):
        cuda.compile(ADD, arch="hopper")
    with pytest.raises(ValueError, match="arch="):
        cuda.compile(ADD, options=["-arch=sm_80"])


def test_without_gpu_and_without_compile_only_says_so(monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    cuda.set_compile_only(False)
    try:
        with pytest.raises(cuda.CudaUnavailable, match="KERNELEVO_CUDA_COMPILE_ONLY"):
            cuda.compile(ADD)
    finally:
        cuda.set_compile_only(None)


def test_python_scalars_are_refused_with_the_numpy_type_to_use():
    with pytest.raises(TypeError, match=r"Python int 3 has no fixed width.*np\.int32"):
        cuda.kernel_args([3])
    with pytest.raises(TypeError, match=r"Python float.*np\.float32"):
        cuda.kernel_args([0.5])
    with pytest.raises(TypeError, match="no fixed width"):
        cuda.kernel_args([True])
    with pytest.raises(TypeError, match="cannot pass str"):
        cuda.kernel_args(["x"])
    with pytest.raises(TypeError, match="cannot pass"):
        cuda.kernel_args([None])


def test_numpy_scalars_are_passed_as_raw_bytes():
    vals = [
        np.int32(7),
        np.float32(1.5),
        np.int64(-2),
        np.float16(3.0),
        np.uint8(9),
        np.uintp(0xDEAD),
    ]
    out = cuda.kernel_args(vals)
    for v, c in zip(vals, out, strict=True):
        assert bytes(c) == v.tobytes()


def test_tensor_arguments_are_checked():
    import torch

    x = torch.arange(12, dtype=torch.float32)
    (ptr,) = cuda.kernel_args([x])  # device=None: compile-only, pointer only
    assert ptr.value == x.data_ptr()
    with pytest.raises(ValueError, match="CUDA tensor on cuda:0"):
        cuda.kernel_args([x], device=0)
    with pytest.raises(ValueError, match="not contiguous"):
        cuda.kernel_args([x.view(3, 4).t()])
    (p2,) = cuda.kernel_args([x[4:]])
    assert p2.value == x.data_ptr() + 16


def test_argument_count_and_sizes_must_match_the_kernel():
    import torch

    x = torch.ones(4)
    cuda.kernel_args([x, np.int32(1)], param_sizes=[8, 4])
    with pytest.raises(TypeError, match="takes 2 arguments, 1 were given"):
        cuda.kernel_args([x], param_sizes=[8, 4])
    with pytest.raises(TypeError, match="argument 1: the kernel parameter takes 4 bytes"):
        cuda.kernel_args([x, np.float64(1)], param_sizes=[8, 4])
    with pytest.raises(TypeError, match="argument 0: the kernel parameter takes 4 bytes"):
        cuda.kernel_args([x, np.int32(1)], param_sizes=[4, 4])
    cuda.kernel_args([x, np.int32(1)], param_sizes=[8, None])


def test_parameter_sizes_parsed_from_source():
    src = """
    // extern "C" __global__ void scale(int a)   <- a comment, not the kernel
    extern "C" __global__ void __launch_bounds__(256) scale(const float* __restrict__ x, float* y,
        float a, int n, unsigned long long m, __half h, float4 v, const int64_t s) { }
    extern "C" __global__ void none() { }
    """
    assert cuda.param_sizes_from_source(src, "scale") == [8, 8, 4, 4, 8, 2, None, 8]
    assert cuda.param_sizes_from_source(src, "none") == []
    assert cuda.param_sizes_from_source(src, "missing") is None


def test_launch_dims_are_padded_and_checked():
    assert cuda.launch_dims(4, (128,)) == ((4, 1, 1), (128, 1, 1))
    assert cuda.launch_dims((2, np.int64(3)), [32, 8]) == ((2, 3, 1), (32, 8, 1))
    for grid, block, err in [
        ((0,), (1,), ValueError),
        ((1,), (33, 32), ValueError),
        ((1,), (1.0,), TypeError),
        ((1, 1, 1, 1), (1,), TypeError),
        ((1, 70000), (1,), ValueError),
        ("1", (1,), TypeError),
    ]:
        with pytest.raises(err):
            cuda.launch_dims(grid, block)


def test_cache_key_changes_with_everything_that_shapes_the_cubin():
    base = cuda.cache_key(ADD, ["-lineinfo"], "sm_90", "13.0.88")
    assert base != cuda.cache_key(ADD, ["-lineinfo"], "sm_90", "nvrtc 13.0")
    assert base == cuda.cache_key(ADD, ["-lineinfo"], "sm_90", "13.0.88")
    assert base != cuda.cache_key(ADD, ["-lineinfo", "--use_fast_math"], "sm_90", "13.0.88")
    assert base != cuda.cache_key(ADD, ["-lineinfo"], "sm_90a", "13.0.88")
    assert base != cuda.cache_key(ADD, ["-lineinfo"], "sm_90", "13.1.0")
    assert base != cuda.cache_key(ADD + " ", ["-lineinfo"], "sm_90", "13.0.88")


def test_default_options_have_lineinfo_and_no_fast_math():
    assert cuda._options(None) == ["-lineinfo"]
    assert cuda._options(["--use_fast_math"]) == ["-lineinfo", "--use_fast_math"]
    with pytest.raises(TypeError):
        cuda._options("--use_fast_math")  # type: ignore[arg-type]


@needs_nvcc
def test_nvcc_time_limit_with_real_nvcc(compile_only, monkeypatch):
    monkeypatch.setenv("KERNELEVO_NVCC_TIMEOUT", "0.01")
    t = time.perf_counter()
    with pytest.raises(cuda.CudaCompileTimeout, match="time limit"):
        cuda.compile(unique(ADD))
    assert time.perf_counter() - t < 5


def test_run_limited_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "pid"
    t = time.perf_counter()
    with pytest.raises(nvcc.CudaCompileTimeout):
        nvcc.run_limited(
            ["bash", "-c", f"sleep 30 & echo $! > {pidfile}; wait"], timeout=0.5, what="fake nvcc"
        )
    assert time.perf_counter() - t < 5
    grandchild = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the grandchild survived the timeout")


def test_run_limited_returns_failures_and_output():
    res = nvcc.run_limited(["bash", "-c", "echo out; echo err >&2; exit 3"], timeout=10)
    assert res.returncode == 3 and "out" in res.output and "err" in res.output


def test_trim_errors_keeps_error_lines_and_context_only():
    log = "\n".join(
        [
            "[1/2] /usr/local/cuda/bin/nvcc -c cuda.cu -Werror=foo -o cuda.cuda.o",
            "FAILED: cuda.cuda.o",
            '/build/x/cuda.cu(7): warning #177-D: variable "i" was declared but never referenced',
            "      int i;",
            "          ^",
            "",
            '/build/x/cuda.cu(12): error: identifier "undefined_thing" is undefined',
            "      y[i] = x[i] + undefined_thing;",
            "                    ^",
            "",
            '1 error detected in the compilation of "/build/x/cuda.cu".',
            "/build/x/main.cpp:3:5: error: 'foo' was not declared in this scope",
            "    3 |     foo();",
            "      |     ^~~",
            "/build/x/main.cpp:9:1: note: suggested alternative",
            "ptxas error   : Entry function 'k' uses too much shared data (0x13880 bytes, 0xc000 max)",
            "ninja: build stopped: subcommand failed.",
        ]
    )
    out = nvcc.trim_errors(log, strip_prefixes=["/build/x"])
    assert out.splitlines() == [
        'cuda.cu:12: error: identifier "undefined_thing" is undefined',
        "      y[i] = x[i] + undefined_thing;",
        "                    ^",
        '1 error detected in the compilation of "cuda.cu".',
        "main.cpp:3:5: error: 'foo' was not declared in this scope",
        "    3 |     foo();",
        "      |     ^~~",
        "ptxas error   : Entry function 'k' uses too much shared data (0x13880 bytes, 0xc000 max)",
    ]
    assert nvcc.parse_errors(out) == [
        ("cuda.cu", 12, 'identifier "undefined_thing" is undefined'),
        ("main.cpp", 3, "'foo' was not declared in this scope"),
    ]


def test_trim_errors_without_error_lines_keeps_the_tail_and_caps_length():
    assert nvcc.trim_errors("a\nb\nSegmentation fault") == "a\nb\nSegmentation fault"
    many = "\n".join(f"k.cu({i}): error: bad" for i in range(100))
    out = nvcc.trim_errors(many, max_lines=10)
    assert len(out.splitlines()) == 11 and out.endswith("(90 more lines)")


def test_cache_dir_follows_kernelevo_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELEVO_CACHE", str(tmp_path / "c"))
    assert nvcc.cache_dir("cuda") == tmp_path / "c" / "cuda"
    monkeypatch.delenv("KERNELEVO_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert nvcc.cache_dir("cuda") == tmp_path / "x" / "kernelevo" / "cuda"


def test_importing_kernelevo_cuda_is_cheap():
    code = (
        "import sys, kernelevo.cuda, kernelevo.backends.inline; "
        "print('torch' in sys.modules, 'pycuda' in sys.modules, 'cuda.bindings.driver' in sys.modules,"
        " 'cuda.bindings.nvrtc' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=child_env()
    )
    assert out.stdout.split() == ["False"] * 4, out.stderr
