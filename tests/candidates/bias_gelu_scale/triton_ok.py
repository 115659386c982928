"""bias + exact GELU + scale fused into one elementwise Triton kernel over the
flattened tensor; the bias is indexed by position modulo the channel count."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_gelu_scale_kernel(x_ptr, bias_ptr, out_ptr, n_elements, n_channels, scale, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    b = tl.load(bias_ptr + offsets % n_channels, mask=mask, other=0.0)
    h = x + b
    gelu = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
    tl.store(out_ptr + offsets, gelu * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, scale: float):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        bias_gelu_scale_kernel[grid](
            x, self.bias, out, n, self.bias.shape[0], self.scale,
            BLOCK_SIZE=BLOCK_SIZE, num_warps=4,
        )
        return out
