"""RMSNorm in Triton: one program per row; the row stays in registers between the
reduction and the scaled write."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, out_ptr, row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(mean_sq + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * row_stride + cols, x * rstd * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = x.shape[-1]
        x2 = x.contiguous().view(-1, hidden)
        out = torch.empty_like(x2)
        BLOCK_SIZE = triton.next_power_of_2(hidden)
        num_warps = min(max(BLOCK_SIZE // 256, 1), 16)
        rms_norm_kernel[(x2.shape[0],)](
            x2, self.weight, out, x2.stride(0), hidden, self.eps,
            BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps,
        )
        return out.view(x.shape)
