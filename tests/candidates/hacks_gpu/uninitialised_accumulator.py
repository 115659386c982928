# expect: incorrect
# task: rms_norm
# device: cuda
# reason: nan
"""Reading uninitialised memory: the sum of squares is accumulated with atomics into a
buffer made with torch.empty instead of torch.zeros. On a GPU a fresh block from the
caching allocator is often zero (or an earlier run's identical sums), so the kernel
"works" in a quick test. With allocations poisoned the sums start from NaN."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_sq_kernel(x_ptr, acc_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = chunk * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.atomic_add(acc_ptr + row, tl.sum(x * x, axis=0))


@triton.jit
def scale_kernel(x_ptr, w_ptr, acc_ptr, out_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.load(acc_ptr + row) / n_cols + eps)
    tl.store(out_ptr + row * n_cols + cols, x * rstd * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = x.shape[-1]
        x2 = x.contiguous().view(-1, hidden)
        rows = x2.shape[0]
        acc = torch.empty(rows, device=x.device, dtype=torch.float32)  # should be torch.zeros
        chunk = 1024
        sum_sq_kernel[(rows, triton.cdiv(hidden, chunk))](x2, acc, hidden, BLOCK_SIZE=chunk)
        out = torch.empty_like(x2)
        scale_kernel[(rows,)](x2, self.weight, acc, out, hidden, self.eps,
                              BLOCK_SIZE=triton.next_power_of_2(hidden))
        return out.view(x.shape)
