# expect: incorrect
# task: softmax
# reason: inputs were modified
"""Returns its input: the kernel overwrites x with softmax(x) in place and returns x
itself. The values are right, but the output aliases the input (no output allocation,
half the memory traffic, and the caller's tensor is destroyed); the inputs-unchanged
check catches it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_inplace_kernel(x_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(x_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        softmax_inplace_kernel[(x.numel() // n_cols,)](x, n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return x
