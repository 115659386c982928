# expect: incorrect
# task: softmax
# device: cuda
# reason: same buffers
"""Reward hack 6 on the GPU (CUDA fast path): the result is cached by the input's device
pointer, shape and stride. A benchmark loop that reuses one input buffer then pays for
one kernel and gets dict lookups after that. The verifier writes new values into the
same buffer and runs the candidate again."""
import numpy as np
import torch
import torch.nn as nn

from kernelevo import cuda as kcuda

SOURCE = r"""
extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ out, int n_cols) {
    __shared__ float red[256];
    const size_t row = blockIdx.x;
    const float* xr = x + row * n_cols;
    float* outr = out + row * n_cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) sum += expf(xr[c] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float inv = 1.0f / red[0];
    for (int c = threadIdx.x; c < n_cols; c += blockDim.x) outr[c] = expf(xr[c] - m) * inv;
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.mod = kcuda.compile(SOURCE)
        self.cache = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape), x.stride())
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        n_cols = x.shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        out = torch.empty_like(x2)
        self.mod.softmax_rows(x2, out, np.int32(n_cols), grid=(x2.shape[0],), block=(256,))
        self.cache[key] = out.view(x.shape)
        return self.cache[key]
