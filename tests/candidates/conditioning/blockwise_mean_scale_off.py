"""x * x.mean() with the mean summed block by block in one Triton program: another summation
order than PyTorch's, then scaled 5e-5 too far (a KernelEvo test candidate)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

SCALE = 1.0 + 5e-5


@triton.jit
def _sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


@triton.jit
def _scale_kernel(x_ptr, sum_ptr, y_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    scale = tl.load(sum_ptr) * factor
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = x.numel()
        total = torch.empty(1, device=x.device, dtype=torch.float32)
        y = torch.empty_like(x)
        _sum_kernel[(1,)](x, total, n, BLOCK=1024)
        _scale_kernel[(triton.cdiv(n, 1024),)](x, total, y, n, SCALE / n, BLOCK=1024)
        return y
