"""The CUDA fast path on NVIDIA's cuda-python, on a real GPU: NVRTC's cubins load and run, in
torch's primary context, on torch's current stream, and give what nvcc's give."""

from __future__ import annotations

import threading
import uuid

import numpy as np
import pytest

from kernelevo import cuda
from kernelevo.backends import cuda_driver, nvrtc

pytestmark = pytest.mark.gpu

SPIN = r"""
extern "C" __global__ void spin_then_inc(const float* x, float* y, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    y[0] = x[0] + 1.0f;
}
"""
CONSTANTS = r"""
extern "C" __global__ void constants(float* y, int* k) {
    y[0] = -INFINITY; y[1] = NAN; y[2] = FLT_MAX; y[3] = FLT_MIN; y[4] = FLT_EPSILON;
    y[5] = M_PI; y[6] = M_SQRT1_2; y[7] = HUGE_VALF;
    k[0] = INT_MAX; k[1] = INT_MIN; k[2] = (int)(UINT_MAX >> 1);
}
"""


@pytest.fixture(autouse=True)
def gpu_mode(tmp_path, monkeypatch):
    import torch

    if nvrtc.version() is None:
        pytest.fail("no NVRTC on the GPU machine: pip install cuda-bindings nvidia-cuda-nvrtc")
    monkeypatch.setenv("KERNELEVO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELEVO_CUDA_COMPILE_ONLY", raising=False)
    cuda.set_compile_only(False)
    torch.cuda.synchronize()
    yield
    torch.cuda.synchronize()
    cuda.set_compile_only(None)


def unique(src: str) -> str:
    return f"// {uuid.uuid4().hex}\n{src}"


def _primary_and_current(device: int) -> tuple[int, int]:
    from cuda.bindings import driver as cu

    _, dev = cu.cuDeviceGet(device)
    _, primary = cu.cuDevicePrimaryCtxRetain(dev)
    cu.cuDevicePrimaryCtxRelease(dev)
    _, current = cu.cuCtxGetCurrent()
    return int(primary), int(current)


def test_an_nvrtc_cubin_runs_on_torchs_current_stream():
    import torch

    mod = cuda.compile(unique(SPIN))
    assert mod.compiler == "nvrtc"
    x, y = torch.full((1,), 41.0, device="cuda"), torch.zeros(1, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        mod.spin_then_inc(x, y, np.int64(300_000_000), grid=1, block=1)
        pending = side.query()
        default_idle = torch.cuda.default_stream().query()
    assert pending is False, "the kernel did not go to torch's current (side) stream"
    assert default_idle is True, "the kernel went to the default stream"
    side.synchronize()
    assert y.item() == 42.0


def test_launches_use_torchs_primary_context_on_any_thread():
    import torch

    device = torch.cuda.current_device()
    torch.zeros(1, device="cuda")
    primary, current = _primary_and_current(device)
    assert current == primary, "torch itself is not in the primary context"
    mod = cuda.compile(unique('extern "C" __global__ void one(float* y) { y[threadIdx.x] = 1.f; }'))
    y = torch.zeros(64, device="cuda")
    mod.one(y, grid=1, block=64)
    assert _primary_and_current(device)[1] == primary
    assert int(cuda_driver.driver().contexts[device]) == primary

    seen: dict[str, int] = {}

    def on_a_new_thread() -> None:  # no context is current on a new thread
        z = torch.zeros(64, device="cuda")
        mod.one(z, grid=1, block=64)
        torch.cuda.synchronize()
        seen["sum"] = int(z.sum().item())
        seen["ctx"] = _primary_and_current(device)[1]

    t = threading.Thread(target=on_a_new_thread)
    t.start()
    t.join()
    assert seen == {"sum": 64, "ctx": primary}
    torch.cuda.synchronize()
    assert torch.all(y == 1)


def test_nvrtc_and_nvcc_cubins_give_the_same_constants():
    import torch

    by_nvrtc = cuda.compile(unique(CONSTANTS))
    # A host header sends the source to nvcc, which, unlike NVRTC with our built-in header, needs
    # <cfloat> for FLT_MAX and friends.
    by_nvcc = cuda.compile(unique("#include <cstdint>\n#include <cfloat>\n" + CONSTANTS))
    assert (by_nvrtc.compiler, by_nvcc.compiler) == ("nvrtc", "nvcc")
    outs = []
    for mod in (by_nvrtc, by_nvcc):
        y = torch.zeros(8, device="cuda")
        k = torch.zeros(3, dtype=torch.int32, device="cuda")
        mod.constants(y, k, grid=1, block=1)
        outs.append((y.view(torch.int32).tolist(), k.tolist()))
    assert outs[0] == outs[1], outs


def test_a_launch_the_driver_refuses_is_a_launch_error_naming_its_code():
    import torch

    src = 'extern "C" __global__ void __launch_bounds__(128) one(float* y) { y[0] = 1.f; }'
    mod = cuda.compile(unique(src))
    y = torch.zeros(1, device="cuda")
    with pytest.raises(cuda.CudaLaunchError, match=r"block=\(1024, 1, 1\).*CUDA_ERROR_\w+"):
        mod.one(y, grid=1, block=1024)  # more threads than the kernel's launch bounds
    mod.one(y, grid=1, block=128)
    torch.cuda.synchronize()
    assert y.item() == 1.0
