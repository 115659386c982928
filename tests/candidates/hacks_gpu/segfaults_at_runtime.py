# expect: rejected
# task: softmax
# device: cuda
# reason: faulthandler
"""A worker that dies mid-forward (SIGSEGV), after a correct kernel was launched: what a
driver fault or a broken extension does. The segfault comes from CPython's
faulthandler test hook, which the static checks now refuse (`import faulthandler`);
real run-time crashes are covered by hacks/wild_store.py and the worker tests."""
import faulthandler

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
        faulthandler._sigsegv()
        return out.view(x.shape)
