"""Both CUDA backends on a real GPU: the fast path (kernelevo.cuda) and the load_inline guard.

One run should tell everything: each test checks results against torch and says what it saw.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from kernelevo import cuda
from kernelevo.backends import cuda_driver, inline


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python that must import this checkout's kernelevo."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH", "")) if x)
    return {**os.environ, "PYTHONPATH": path, **extra}


pytestmark = pytest.mark.gpu

ADD = r"""
extern "C" __global__ void add(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}
"""

SOFTMAX = r"""
extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
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
"""

SPIN = r"""
extern "C" __global__ void spin_then_inc(const float* x, float* y, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    y[0] = x[0] + 1.0f;
}
"""

REVERSE = r"""
extern "C" __global__ void reverse_rows(const float* x, float* y, int n) {
    extern __shared__ float buf[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = x[(size_t)blockIdx.x * n + i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[(size_t)blockIdx.x * n + i] = buf[n - 1 - i];
}
"""


@pytest.fixture(autouse=True)
def gpu_mode(tmp_path, monkeypatch):
    import torch

    monkeypatch.setenv("KERNELEVO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELEVO_CUDA_COMPILE_ONLY", raising=False)
    cuda.set_compile_only(False)
    torch.cuda.synchronize()
    yield tmp_path / "cache"
    torch.cuda.synchronize()
    cuda.set_compile_only(None)


def unique(src: str) -> str:
    return f"// {uuid.uuid4().hex}\n{src}"


def test_add_kernel_matches_torch_and_counts_the_launch():
    import torch

    mod = cuda.compile(ADD)
    assert mod.device == torch.cuda.current_device()
    major, minor = torch.cuda.get_device_capability()
    assert mod.arch == f"sm_{major}{minor}"
    n = 1_000_003
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    before = cuda.launch_count()
    mod.add(x, y, z, np.int32(n), grid=((n + 255) // 256,), block=(256,))
    assert cuda.launch_count() == before + 1
    torch.testing.assert_close(z, x + y, rtol=0, atol=0)


@pytest.mark.parametrize("rows,cols", [(64, 1024), (33, 1000), (8, 8192)])
def test_softmax_kernel_matches_torch(rows, cols):
    import torch

    mod = cuda.compile(SOFTMAX)
    x = torch.randn(rows, cols, device="cuda") * 4
    y = torch.empty_like(x)
    threads = 256
    mod.softmax_rows(x, y, np.int32(cols), grid=(rows,), block=(threads,), shared=threads * 4)
    torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)


def test_launch_goes_to_torchs_current_stream():
    import torch

    mod = cuda.compile(SPIN)
    x = torch.full((1,), 41.0, device="cuda")
    y = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    cycles = np.int64(300_000_000)  # ~0.15 s
    with torch.cuda.stream(side):
        mod.spin_then_inc(x, y, cycles, grid=(1,), block=(1,))
        pending_on_side = side.query()
    assert pending_on_side is False, "the kernel did not go to the current (side) stream"
    side.synchronize()
    assert side.query() is True
    assert y.item() == 42.0

    y.zero_()
    torch.cuda.synchronize()
    other = torch.cuda.Stream()
    mod.spin_then_inc(x, y, cycles, grid=(1,), block=(1,), stream=other)  # explicit stream wins
    assert other.query() is False
    other.synchronize()
    assert y.item() == 42.0


def test_cuda_graph_capture_and_replay():
    import torch

    mod = cuda.compile(ADD)
    n = 4096
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        mod.add(x, y, z, np.int32(n), grid=(n // 256,), block=(256,))  # warm-up outside capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        mod.add(x, y, z, np.int32(n), grid=(n // 256,), block=(256,))
    x.copy_(torch.randn(n, device="cuda"))
    z.zero_()
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(z, x + y, rtol=0, atol=0)


def test_disk_cache_hit_is_fast_in_process_and_in_a_fresh_process(gpu_mode):
    src = unique(ADD)
    t = time.perf_counter()
    cuda.compile(src)
    cold = time.perf_counter() - t
    cuda_driver.loaded.clear()  # forget the loaded module: force the disk path
    t = time.perf_counter()
    mod = cuda.compile(src)
    warm = time.perf_counter() - t
    assert warm < 0.1, f"cache hit took {warm:.3f} s (cold compile {cold:.3f} s)"
    assert mod.kernel_names == ["add"]
    code = textwrap.dedent(f"""
        import time, torch
        torch.zeros(1, device="cuda"); torch.cuda.synchronize()
        from kernelevo import cuda
        t = time.perf_counter(); cuda.compile({src!r}); print(time.perf_counter() - t)
    """)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=child_env(KERNELEVO_CACHE=str(gpu_mode)),
    )
    assert out.returncode == 0, out.stderr
    fresh = float(out.stdout.split()[-1])
    assert fresh < 0.1, f"fresh-process cache hit took {fresh:.3f} s"


def test_compile_error_names_the_line_on_the_gpu_machine():
    src = 'extern "C" __global__ void k(float* y) {\n    y[threadIdx.x] = undefined_thing;\n}\n'
    with pytest.raises(cuda.CudaCompileError) as info:
        cuda.compile(src)
    assert "kernel.cu:2: error" in str(info.value) and "undefined_thing" in str(info.value)


def test_dynamic_shared_memory_above_48kb():
    import torch

    mod = cuda.compile(REVERSE)
    rows, n = 4, 40_000  # 160 000 bytes of dynamic shared memory per block
    x = torch.randn(rows, n, device="cuda")
    y = torch.empty_like(x)
    mod.reverse_rows(x, y, np.int32(n), grid=(rows,), block=(1024,), shared=n * 4)
    torch.testing.assert_close(y, x.flip(1), rtol=0, atol=0)
    with pytest.raises(cuda.CudaLaunchError, match="shared"):
        mod.reverse_rows(x, y, np.int32(n), grid=(rows,), block=(1024,), shared=400_000)


def test_argument_errors_are_caught_before_the_launch():
    import torch

    mod = cuda.compile(ADD)
    x = torch.randn(64, device="cuda")
    before = cuda.launch_count()
    with pytest.raises(ValueError, match="CUDA tensor"):
        mod.add(x.cpu(), x, x, np.int32(64), grid=(1,), block=(64,))
    with pytest.raises(ValueError, match="not contiguous"):
        mod.add(x.view(8, 8).t(), x, x, np.int32(64), grid=(1,), block=(64,))
    with pytest.raises(TypeError, match=r"np\.int32"):
        mod.add(x, x, x, 64, grid=(1,), block=(64,))
    with pytest.raises(TypeError, match="4 bytes"):
        mod.add(x, x, x, np.int64(64), grid=(1,), block=(64,))
    with pytest.raises(TypeError, match="takes 4 arguments"):
        mod.add(x, x, np.int32(64), grid=(1,), block=(64,))
    assert cuda.launch_count() == before


def test_parameter_sizes_come_from_the_driver():
    mod = cuda.compile('extern "C" __global__ void vec(float4* out, float4 v) { out[0] = v; }\n')
    assert cuda.param_sizes_from_source(mod.source, "vec") == [8, None]
    assert mod.vec.param_sizes == [8, 16], "cuFuncGetParamInfo missing? (driver < 12.4)"


def test_half_and_int64_scalars_reach_the_kernel():
    import torch

    src = r"""
    #include <cuda_fp16.h>
    extern "C" __global__ void fill(__half* y, __half a, long long n) {
        long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        if (i < n) y[i] = a;
    }
    """
    mod = cuda.compile(src)
    y = torch.zeros(1000, dtype=torch.float16, device="cuda")
    mod.fill(y, np.float16(2.5), np.int64(1000), grid=(4,), block=(256,))
    assert torch.all(y == 2.5)


def test_same_kernel_name_in_two_modules_stays_apart():
    import torch

    a = cuda.compile('extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n')
    b = cuda.compile('extern "C" __global__ void k(float* y) { y[threadIdx.x] = 2.0f; }\n')
    ya, yb = torch.zeros(32, device="cuda"), torch.zeros(32, device="cuda")
    a.k(ya, grid=1, block=32)
    b.k(yb, grid=1, block=32)
    assert torch.all(ya == 1) and torch.all(yb == 2)


def test_compile_only_mode_on_a_gpu_machine_does_not_launch():
    import torch

    cuda.set_compile_only(True)
    mod = cuda.compile(ADD)
    x = torch.zeros(4, device="cuda")
    with pytest.raises(cuda.CudaUnavailable, match="compiled, not run"):
        mod.add(x, x, x, np.int32(4), grid=1, block=32)


def test_launch_after_another_thread_compiled():
    """Worker code may compile on one thread and launch on another: the context must follow."""
    import threading

    import torch

    box = {}
    t = threading.Thread(target=lambda: box.setdefault("mod", cuda.compile(unique(ADD))))
    t.start()
    t.join()
    x = torch.ones(256, device="cuda")
    z = torch.empty_like(x)
    box["mod"].add(x, x, z, np.int32(256), grid=1, block=256)
    assert torch.all(z == 2)


# ---- load_inline guard: real builds (slow: 40-70 s each when cold) ----

INLINE_CPP = "torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b);"
INLINE_CUDA = r"""
#include <torch/extension.h>
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b) {
    auto c = torch::empty_like(a);
    int n = a.numel();
    add_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
    return c;
}
"""


@pytest.fixture
def guard(gpu_mode, monkeypatch):
    import torch.utils.cpp_extension as ext

    monkeypatch.delenv("KERNELEVO_BUILD_TIMEOUT", raising=False)
    monkeypatch.setattr(ext, "load_inline", ext.load_inline)
    monkeypatch.setattr(ext, "_run_ninja_build", ext._run_ninja_build)
    monkeypatch.setattr(inline, "_original_load_inline", None)
    monkeypatch.setattr(inline, "_original_ninja", None)
    inline.install_load_inline_guard()
    inline.reset_inline_builds()
    return gpu_mode


@pytest.mark.slow
def test_load_inline_real_build_in_its_own_folder(guard):
    import torch
    from torch.utils.cpp_extension import load_inline

    src = INLINE_CUDA + f"// {uuid.uuid4().hex}\n"
    t = time.perf_counter()
    mod = load_inline(
        name="add_ext",
        cpp_sources=INLINE_CPP,
        cuda_sources=src,
        functions=["add_cuda"],
        verbose=True,
        extra_cflags=[""],
        extra_ldflags=[""],
    )
    cold = time.perf_counter() - t
    a, b = torch.randn(10_000, device="cuda"), torch.randn(10_000, device="cuda")
    torch.testing.assert_close(mod.add_cuda(a, b), a + b, rtol=0, atol=0)
    t = time.perf_counter()
    load_inline(name="add_ext", cpp_sources=INLINE_CPP, cuda_sources=src, functions=["add_cuda"])
    warm = time.perf_counter() - t
    first, second = inline.inline_builds()
    folder = Path(first["folder"])
    assert first["ok"] and first["mode"] == "build" and not first["cached"], first
    assert second["cached"] and second["folder"] == first["folder"]
    assert folder.parent == guard / "inline" and list(folder.glob("*.so"))
    assert not (folder / "lock").exists()
    print(f"load_inline cold build {cold:.1f} s, second load {warm:.3f} s")


@pytest.mark.slow
def test_load_inline_compile_error_on_gpu_machine(guard):
    from torch.utils.cpp_extension import load_inline

    broken = INLINE_CUDA.replace("c[i] = a[i] + b[i];", "c[i] = a[i] + undefined_thing;")
    line = broken[: broken.index("undefined_thing")].count("\n") + 1
    with pytest.raises(cuda.CudaCompileError) as info:
        load_inline(
            name="add_broken", cpp_sources=INLINE_CPP, cuda_sources=broken, functions=["add_cuda"]
        )
    assert f"cuda_sources:{line}: error" in str(info.value), str(info.value)
    (rec,) = inline.inline_builds()
    assert not Path(rec["folder"]).exists()


@pytest.mark.slow
def test_killed_build_lock_does_not_block_the_next_build(guard):
    import torch
    from torch.utils.cpp_extension import load_inline

    src = INLINE_CUDA + f"// {uuid.uuid4().hex}\n"
    kw = dict(name="add_killed", cpp_sources=INLINE_CPP, cuda_sources=src, functions=["add_cuda"])
    folder = inline.build_folder("add_killed", inline.build_key(inline._bind((), kw)))
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        from kernelevo.backends import cuda_driver, inline
        inline.install_load_inline_guard()
        from torch.utils.cpp_extension import load_inline
        load_inline(name="add_killed", cpp_sources={INLINE_CPP!r}, cuda_sources={src!r}, functions=["add_cuda"])
    """),
        ],
        env=child_env(KERNELEVO_CACHE=str(guard), KERNELEVO_CUDA_COMPILE_ONLY="0"),
    )
    try:
        for _ in range(1200):
            if (folder / "lock").exists():
                break
            time.sleep(0.05)
        assert (folder / "lock").exists(), "the child never started building"
        child.send_signal(signal.SIGKILL)
        child.wait()
        t = time.perf_counter()
        mod = load_inline(**kw)
        a = torch.randn(1000, device="cuda")
        torch.testing.assert_close(mod.add_cuda(a, a), a + a, rtol=0, atol=0)
        print(f"build after a killed builder took {time.perf_counter() - t:.1f} s")
    finally:
        child.kill()
        child.wait()
