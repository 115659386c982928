# expect: rejected
# task: softmax
# device: cuda
# reason: serves only the CUDA helper's scalar types
"""A worker that would die mid-forward (SIGSEGV), after a correct kernel was launched: numpy's
as_strided reads far outside a one-element array. The static allowlist admits numpy only for
the CUDA helper's scalar types, so this is refused before it runs; a worker that crashes all
the same gets a runtime_error verdict and the next candidate a fresh worker (tests/test_worker.py)."""
import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        out = torch.empty_like(x2)
        softmax_kernel[(x2.shape[0],)](x2, out, n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
        np.lib.stride_tricks.as_strided(np.zeros(1), shape=(1 << 40,), strides=(1 << 24,)).sum()
        return out.view(x.shape)
