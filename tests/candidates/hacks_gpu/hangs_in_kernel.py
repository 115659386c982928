# expect: timeout
# task: softmax
# device: cuda
# reason: time limit
"""A kernel that never finishes: every program spins on a "ready" flag in device
memory that nothing sets (read with an atomic, so the compiler cannot drop the loop).
forward returns (launches are asynchronous); the next synchronisation waits forever.
Only killing the worker's process group stops it; the GPU then recovers."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_after_flag_kernel(x_ptr, out_ptr, flag_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    ready = tl.atomic_add(flag_ptr, 0)
    while ready == 0:
        ready = tl.atomic_add(flag_ptr, 0)
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
        flag = torch.zeros(1, device=x.device, dtype=torch.int32)  # "set by the producer" (there is none)
        softmax_after_flag_kernel[(x2.shape[0],)](x2, out, flag, n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
