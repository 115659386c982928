"""How long the CUDA fast path takes to compile a kernel with NVRTC and with nvcc, cold.

Each sample is a source never compiled before (a fresh comment), built for sm_90, so neither
compiler's cache helps; NVRTC runs in this process, nvcc as the subprocess it always was. No GPU
needed. The last line gives both medians and their ratio.

    python3 bench/cuda_compile.py [--samples 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelevo.backends import cubin, nvcc, nvrtc

SOURCES = {
    "add": r"""
extern "C" __global__ void add(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}
""",
    "softmax_fp16": r"""
#include <cuda_fp16.h>
extern "C" __global__ void softmax_rows(const __half* x, __half* y, int cols) {
    extern __shared__ float buf[];
    const __half* row = x + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, __half2float(row[c]));
    buf[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
        __syncthreads();
    }
    m = buf[0];
    __syncthreads();
    float sum = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(__half2float(row[c]) - m);
    buf[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[(size_t)blockIdx.x * cols + c] = __float2half(expf(__half2float(row[c]) - m) / buf[0]);
}
""",
}
OPTIONS = ["-lineinfo"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=7)
    args = ap.parse_args()
    if nvrtc.version() is None:
        print("cuda_compile: no NVRTC here (pip install cuda-bindings nvidia-cuda-nvrtc)")
        return 1
    compiler = nvcc.find_nvcc()
    print(f"{nvrtc.version()}; nvcc {nvcc.nvcc_version(compiler)} ({compiler})")
    nvrtc.compile_cubin(SOURCES["add"], OPTIONS, "sm_90", 120)  # the library's first load
    medians = {}
    for name, source in SOURCES.items():
        times: dict[str, list[float]] = {"nvrtc": [], "nvcc": []}
        for _ in range(args.samples):
            src = f"// {uuid.uuid4().hex}\n{source}"
            t = time.perf_counter()
            nvrtc.compile_cubin(src, OPTIONS, "sm_90", 120)
            times["nvrtc"].append(time.perf_counter() - t)
            t = time.perf_counter()
            cubin._nvcc_cubin(compiler, src, OPTIONS, "sm_90", 120)
            times["nvcc"].append(time.perf_counter() - t)
        medians[name] = {k: statistics.median(v) for k, v in times.items()}
        m = medians[name]
        print(
            f"{name}: NVRTC median {m['nvrtc']:.3f} s, nvcc median {m['nvcc']:.3f} s "
            f"({args.samples} samples each)"
        )
    parts = [
        f"{n} {m['nvrtc']:.3f} s vs {m['nvcc']:.3f} s ({m['nvcc'] / m['nvrtc']:.1f}x)"
        for n, m in medians.items()
    ]
    print("cuda_compile: NVRTC vs nvcc, cold, sm_90: " + "; ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
