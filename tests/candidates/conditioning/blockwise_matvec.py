"""A @ x, one Triton program per row summing its products block by block: another summation order
than PyTorch's, as correct as PyTorch's (a KernelEvo test candidate)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

OFF_ROW, OFF_BY = -1, 4e-3  # one output element moved (the test's wrong variant)


@triton.jit
def _row_dot_kernel(a_ptr, x_ptr, y_ptr, k, off_row, off_by, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, k, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < k
        a = tl.load(a_ptr + row * k + offs, mask=mask, other=0.0)
        acc += a * tl.load(x_ptr + offs, mask=mask, other=0.0)
    total = tl.sum(acc, axis=0)
    tl.store(y_ptr + row, tl.where(row == off_row, total + off_by, total))


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        a, x = a.contiguous(), x.contiguous()
        rows, k = a.shape
        y = torch.empty(rows, 1, device=a.device, dtype=torch.float32)
        _row_dot_kernel[(rows,)](a, x, y, k, OFF_ROW, OFF_BY, BLOCK=4096)
        return y
