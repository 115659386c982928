# expect: runtime_error
# task: softmax
# reason: crashed
# reason_gpu: illegal memory access
"""A kernel bug that kills the process: the row offset is computed in elements but
applied twice, and the store is not masked by the tensor's extent, so rows past the
first write far outside the output (a segfault under the interpreter, an illegal
memory access that poisons the CUDA context on a GPU). The worker must die alone and
be replaced."""
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
    # Bug: a "stride in bytes" scaled by the element count again.
    out_row = out_ptr + row.to(tl.int64) * n_cols * 4 * (1 << 30)
    tl.store(out_row + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        out = torch.empty_like(x2)
        softmax_kernel[(x2.shape[0],)](x2, out, n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
