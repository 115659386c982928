"""Row softmax as a CUDA extension built with torch.utils.cpp_extension.load_inline,
the way KernelBench solutions are written (the compatibility path: 40-70 s cold build).

One 256-thread block per row with shuffle-based block reductions; the C++ wrapper
allocates the output and launches on PyTorch's current stream. Built in __init__, so
importing this file needs no GPU or compiler.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor softmax_cuda(torch::Tensor x);"

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <math_constants.h>

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, offset));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffff, v, offset);
    return v;
}

__device__ float block_max(float v, float* slots) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int n_warps = (blockDim.x + 31) >> 5;
    v = warp_max(v);
    if (lane == 0) slots[warp] = v;
    __syncthreads();
    v = warp_max(lane < n_warps ? slots[lane] : -CUDART_INF_F);
    __syncthreads();
    return v;
}

__device__ float block_sum(float v, float* slots) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int n_warps = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    if (lane == 0) slots[warp] = v;
    __syncthreads();
    v = warp_sum(lane < n_warps ? slots[lane] : 0.0f);
    __syncthreads();
    return v;
}

__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ out, int n_cols) {
    __shared__ float slots[32];
    const size_t row = blockIdx.x;
    const float* x_row = x + row * n_cols;
    float* out_row = out + row * n_cols;

    float m = -CUDART_INF_F;
    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) m = fmaxf(m, x_row[c]);
    m = block_max(m, slots);

    float s = 0.0f;
    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) s += expf(x_row[c] - m);
    const float inv = 1.0f / block_sum(s, slots);

    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) out_row[c] = expf(x_row[c] - m) * inv;
}

torch::Tensor softmax_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "softmax_cuda: x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "softmax_cuda: x must be float32");
    auto xc = x.contiguous();
    const int64_t n_cols = xc.size(-1);
    const int64_t n_rows = xc.numel() / n_cols;
    auto out = torch::empty_like(xc);
    if (n_rows == 0) return out;
    softmax_rows<<<n_rows, 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), out.data_ptr<float>(), static_cast<int>(n_cols));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = load_inline(
            name="kernelevo_softmax_inline",
            cpp_sources=CPP_SOURCE,
            cuda_sources=CUDA_SOURCE,
            functions=["softmax_cuda"],
            extra_cuda_cflags=["-O3"],
            verbose=False,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ext.softmax_cuda(x)
