"""The load_inline guard on a machine without a GPU: compile-only checks, folders, locks, limits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from kernelevo import cuda
from kernelevo.backends import inline, inline_check, nvcc


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python that must import this checkout's kernelevo."""
    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH", "")) if x)
    return {**os.environ, "PYTHONPATH": path, **extra}


def _has(tool: str) -> bool:
    import shutil

    return shutil.which(tool) is not None


def _has_nvcc() -> bool:
    try:
        nvcc.find_nvcc()
        return True
    except cuda.CudaUnavailable:
        return False


needs_nvcc = pytest.mark.skipif(not _has_nvcc(), reason="nvcc not installed")
needs_ninja = pytest.mark.skipif(
    not (_has("ninja") and _has("c++")), reason="ninja and c++ needed for real builds"
)

SOFTMAX_CPP = "torch::Tensor softmax_cuda(torch::Tensor x);"
SOFTMAX_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    extern __shared__ float buf[];
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    buf[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
        __syncthreads();
    }
    m = buf[0];
    __syncthreads();
    float sum = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(row[c] - m);
    buf[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    sum = buf[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(row[c] - m) / sum;
}

torch::Tensor softmax_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.is_contiguous());
    auto y = torch::empty_like(x);
    const int threads = 256;
    softmax_kernel<<<x.size(0), threads, threads * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), (int)x.size(1));
    return y;
}
"""
TINY_PYBIND = """
#include <pybind11/pybind11.h>
int add_one(int x) { return x + 1; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("add_one", &add_one); }
"""


@pytest.fixture
def guard(tmp_path, monkeypatch):
    """The guard installed for this test only; torch's own functions come back afterwards."""
    import torch.utils.cpp_extension as ext

    monkeypatch.setenv("KERNELEVO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELEVO_BUILD_TIMEOUT", raising=False)
    monkeypatch.setattr(ext, "load_inline", ext.load_inline)
    monkeypatch.setattr(ext, "_run_ninja_build", ext._run_ninja_build)
    monkeypatch.setattr(inline, "_original_load_inline", None)
    monkeypatch.setattr(inline, "_original_ninja", None)
    inline.install_load_inline_guard()
    inline.reset_inline_builds()
    cuda.set_compile_only(True)
    yield tmp_path / "cache"
    cuda.set_compile_only(None)


def load_inline(**kw):
    from torch.utils.cpp_extension import load_inline as li  # what a candidate imports

    return li(**kw)


def test_guard_replaces_load_inline_once(guard):
    import torch.utils.cpp_extension as ext

    first = ext.load_inline
    assert getattr(first, "__kernelevo_guard__", False)
    assert getattr(ext._run_ninja_build, "__kernelevo_guard__", False)
    inline.install_load_inline_guard()
    assert ext.load_inline is first
    assert first.__wrapped__ is inline._original_load_inline


@needs_nvcc
def test_compile_only_good_sources_give_a_stub_module(guard):
    mod = load_inline(
        name="tiny_ok",
        cpp_sources="int add_one(int x) { return x + 1; }",
        cuda_sources='extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n',
        functions=None,
        no_implicit_headers=True,
    )
    with pytest.raises(cuda.CudaUnavailable, match="compiled, not run"):
        mod.add_one(1)
    (rec,) = inline.inline_builds()
    assert rec["mode"] == "compile_only" and rec["ok"] and rec["cuda"] and rec["name"] == "tiny_ok"
    assert not list((guard / "inline").glob("tiny_ok-*"))  # nothing built


@needs_nvcc
def test_compile_only_cuda_error_is_located_in_cuda_sources(guard):
    with pytest.raises(cuda.CudaCompileError) as info:
        load_inline(
            name="tiny_bad_cu",
            cpp_sources="int f();",
            cuda_sources="__global__ void k(float* y) {\n  y[threadIdx.x] = undefined_thing;\n}\n",
            no_implicit_headers=True,
        )
    msg = str(info.value)
    assert "cuda_sources:2: error" in msg and "undefined_thing" in msg
    assert ("cuda_sources", 2) in [e[:2] for e in info.value.errors]
    (rec,) = inline.inline_builds()
    assert not rec["ok"] and "CudaCompileError" in rec["error"]


def test_compile_only_cpp_error_is_located_in_cpp_sources(guard):
    with pytest.raises(cuda.CudaCompileError, match=r"cpp_sources:2:\d+: error: .*nosuch"):
        load_inline(
            name="tiny_bad_cpp",
            cpp_sources="\nint f(int x) { return nosuch + x; }",
            no_implicit_headers=True,
        )


@needs_nvcc
def test_missing_cuda_library_header_is_unchecked_not_an_error(guard):
    load_inline(
        name="uses_cudnn",
        cpp_sources="int f();",
        cuda_sources="#include <cudnn_not_here_v99.h>\n__global__ void k() {}\n",
        no_implicit_headers=True,
    )
    (rec,) = inline.inline_builds()
    assert rec["ok"] and "cudnn_not_here_v99.h" in rec["unchecked"]


@needs_nvcc
@pytest.mark.slow
def test_compile_only_softmax_extension_compiles_and_is_then_cached(guard):
    load_inline(
        name="softmax_ext",
        cpp_sources=SOFTMAX_CPP,
        cuda_sources=SOFTMAX_CUDA,
        functions=["softmax_cuda"],
        extra_cflags=[""],
        extra_ldflags=[""],
        verbose=True,
    )
    t = time.perf_counter()
    mod = load_inline(
        name="softmax_ext",
        cpp_sources=SOFTMAX_CPP,
        cuda_sources=SOFTMAX_CUDA,
        functions=["softmax_cuda"],
        extra_cflags=[""],
        extra_ldflags=[""],
        verbose=True,
    )
    assert time.perf_counter() - t < 1
    with pytest.raises(cuda.CudaUnavailable, match="compiled, not run"):
        mod.softmax_cuda(None)
    first, second = inline.inline_builds()
    assert first["ok"] and not first["cached"] and "unchecked" not in first
    assert second["ok"] and second["cached"]


@needs_nvcc
@pytest.mark.slow
def test_compile_only_broken_softmax_reports_the_error(guard):
    broken = SOFTMAX_CUDA.replace("sum = buf[0];", "sum = buf[0] + not_declared;")
    line = broken[: broken.index("not_declared")].count("\n") + 1
    with pytest.raises(cuda.CudaCompileError) as info:
        load_inline(
            name="softmax_broken",
            cpp_sources=SOFTMAX_CPP,
            cuda_sources=broken,
            functions=["softmax_cuda"],
        )
    assert f"cuda_sources:{line}: error" in str(info.value)
    assert "not_declared" in str(info.value)


def test_build_folder_is_distinct_per_content(guard):
    import torch.utils.cpp_extension as ext

    base = dict(
        name="e", cpp_sources="int f();", cuda_sources="__global__ void k() {}", functions=["f"]
    )

    def key(**over):
        return inline.build_key(inline._bind((), {**base, **over}))

    k0 = key()
    assert k0 == key(verbose=True, build_directory="/somewhere/else")
    assert k0 == key(extra_cflags=[""], extra_ldflags=[], extra_cuda_cflags=None)
    others = [
        key(cuda_sources="__global__ void k2() {}"),
        key(cpp_sources="int g();"),
        key(name="e2"),
        key(extra_cuda_cflags=["-O3"]),
        key(extra_cflags=["-O2"]),
        key(functions=["f", "g"]),
        key(extra_ldflags=["-lcublas"]),
    ]
    assert len({k0, *others}) == len(others) + 1
    assert inline.build_folder("e", k0) != inline.build_folder("e", others[0])
    assert inline.build_folder("e", k0).parent == guard / "inline"
    assert ext.load_inline.__kernelevo_guard__


def test_stale_lock_is_removed_when_no_builder_holds_the_folder(guard):
    folder = inline.build_folder("stale", "0" * 64)
    folder.mkdir(parents=True)
    (folder / "lock").write_text("")
    with inline.hold_build_folder(folder, timeout=5) as (_fd, removed):
        assert removed and not (folder / "lock").exists()


def test_lock_of_a_live_builder_is_respected(guard, tmp_path):
    folder = inline.build_folder("busy", "1" * 64)
    folder.mkdir(parents=True)
    (folder / "lock").write_text("")
    ready = tmp_path / "ready"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import time
        from pathlib import Path
        from kernelevo.backends import inline
        with inline.hold_build_folder(Path({str(folder)!r}), timeout=5):
            Path({str(ready)!r}).write_text("1")
            time.sleep(30)
    """),
        ],
        env=child_env(KERNELEVO_CACHE=str(guard)),
    )
    try:
        for _ in range(200):
            if ready.exists():
                break
            time.sleep(0.05)
        assert ready.exists()
        (folder / "lock").write_text("")  # the live builder's torch lock
        with (
            pytest.raises(cuda.CudaCompileTimeout, match="another process"),
            inline.hold_build_folder(folder, timeout=0.5),
        ):
            pass
        assert (folder / "lock").exists()
        holder.send_signal(signal.SIGKILL)  # a killed builder releases its flock
        holder.wait()
        with inline.hold_build_folder(folder, timeout=5) as (_, removed):
            assert removed
    finally:
        holder.kill()
        holder.wait()


def test_map_lines_points_into_the_candidate_strings():
    offsets = {"main.cpp": ("cpp_sources", 1, 3), "cuda.cu": ("cuda_sources", 3, 10)}
    msg = "cuda.cu:5: error: x\nmain.cpp:2:7: error: y\nmain.cpp:9:1: error: binding\n/inc/cuda.cuh:5: error: z"
    assert inline_check.map_lines(msg, offsets).splitlines() == [
        "cuda_sources:2: error: x",
        "cpp_sources:1:7: error: y",
        "main.cpp:9:1: error: binding",
        "/inc/cuda.cuh:5: error: z",
    ]


@needs_ninja
def test_real_build_in_its_own_folder_then_cached(guard):
    cuda.set_compile_only(False)
    mod = load_inline(name="tiny_real", cpp_sources=TINY_PYBIND, no_implicit_headers=True)
    assert mod.add_one(41) == 42
    again = load_inline(name="tiny_real", cpp_sources=TINY_PYBIND, no_implicit_headers=True)
    assert again.add_one(1) == 2
    first, second = inline.inline_builds()
    assert first["mode"] == "build" and first["ok"] and not first["cached"]
    assert second["cached"] and second["folder"] == first["folder"]
    folder = Path(first["folder"])
    assert folder.parent == guard / "inline" and list(folder.glob("*.so"))
    assert not (folder / "lock").exists()


@needs_ninja
def test_real_build_error_is_located_and_the_folder_removed(guard):
    cuda.set_compile_only(False)
    with pytest.raises(cuda.CudaCompileError, match=r"cpp_sources:2:\d+: error") as info:
        load_inline(
            name="tiny_broken",
            cpp_sources="int ok() { return 1; }\nint f( {",
            no_implicit_headers=True,
        )
    assert "ninja exit" in str(info.value)
    (rec,) = inline.inline_builds()
    assert not Path(rec["folder"]).exists()


@needs_ninja
def test_real_build_that_a_stale_lock_would_block_still_builds(guard):
    cuda.set_compile_only(False)
    src = TINY_PYBIND + f"// {uuid.uuid4().hex}\n"
    args = inline._bind((), dict(name="tiny_locked", cpp_sources=src, no_implicit_headers=True))
    folder = inline.build_folder("tiny_locked", inline.build_key(args))
    folder.mkdir(parents=True)
    (folder / "lock").write_text("")  # left by a build that was killed
    t = time.perf_counter()
    assert (
        load_inline(name="tiny_locked", cpp_sources=src, no_implicit_headers=True).add_one(1) == 2
    )
    assert time.perf_counter() - t < 60
    assert inline.inline_builds()[-1]["stale_lock_removed"]


@needs_ninja
def test_real_build_past_its_time_limit_is_killed_and_cleaned(guard, monkeypatch):
    cuda.set_compile_only(False)
    monkeypatch.setenv("KERNELEVO_BUILD_TIMEOUT", "1")
    src = f"// {uuid.uuid4().hex}\nint twice(int x) {{ return 2 * x; }}\n"
    t = time.perf_counter()
    with pytest.raises(cuda.CudaCompileTimeout, match="time limit"):
        load_inline(
            name="slow_build", cpp_sources=src, functions=["twice"]
        )  # torch/extension.h: >1 s
    assert time.perf_counter() - t < 20
    (rec,) = inline.inline_builds()
    assert not Path(rec["folder"]).exists()
    left = subprocess.run(
        ["pgrep", "-f", rec["folder"]], capture_output=True, text=True
    ).stdout.split()
    assert not left, f"compiler processes left behind: {left}"


@needs_ninja
@pytest.mark.slow
def test_killed_builder_does_not_block_the_next_build(guard, tmp_path):
    """A worker killed mid-build leaves torch's lock file; the next build must not wait forever."""
    cuda.set_compile_only(False)
    # pybind11 alone: a build long enough to be killed in, without torch's headers' minute
    src = f"// {uuid.uuid4().hex}\n{TINY_PYBIND}"
    kw = dict(name="killed_build", cpp_sources=src, no_implicit_headers=True)
    folder = inline.build_folder("killed_build", inline.build_key(inline._bind((), kw)))
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        from kernelevo.backends import inline
        inline.install_load_inline_guard()
        from torch.utils.cpp_extension import load_inline
        load_inline(name="killed_build", cpp_sources={src!r}, no_implicit_headers=True)
    """),
        ],
        env=child_env(KERNELEVO_CACHE=str(guard), KERNELEVO_CUDA_COMPILE_ONLY="0"),
    )
    try:
        for _ in range(600):
            if (folder / "lock").exists():
                break
            time.sleep(0.05)
        assert (folder / "lock").exists(), "the child never started building"
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert (folder / "lock").exists()  # torch's lock, left behind
        mod = load_inline(**kw)
        assert mod.add_one(41) == 42
    finally:
        child.kill()
        child.wait()


@needs_ninja
def test_a_built_folder_copied_elsewhere_loads_in_a_new_process_without_building(tmp_path):
    """The compile sandbox builds in its folder, the runner gets a copy at another path: a new
    process there must import the built module, not rebuild it (ninja is not even on its PATH)."""
    import shutil

    script = textwrap.dedent(f"""
        import json
        from kernelevo.backends import inline
        inline.install_load_inline_guard()
        from torch.utils.cpp_extension import load_inline
        mod = load_inline(name="tiny_moved", cpp_sources={TINY_PYBIND!r}, no_implicit_headers=True)
        print(json.dumps([mod.add_one(41), inline.inline_builds()[0].get("prebuilt", False)]))
    """)
    first = subprocess.run(
        [sys.executable, "-c", script],
        env=child_env(KERNELEVO_CACHE=str(tmp_path / "a")),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.split("\n")[-2] == "[42, false]"
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    no_tools = tmp_path / "bin"
    no_tools.mkdir()
    second = subprocess.run(
        [sys.executable, "-c", script],
        env=child_env(KERNELEVO_CACHE=str(tmp_path / "b"), PATH=str(no_tools)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.split("\n")[-2] == "[42, true]"
