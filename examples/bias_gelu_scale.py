"""Fused elementwise chain: add a per-channel bias, exact (erf) GELU, multiply by a scale.

The epilogue of every transformer MLP up-projection. Eager PyTorch runs three kernels
and moves the tensor through memory three times; a fused kernel does it once, so the
achievable speedup is about 3x and the goal is the memory roofline.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8192
dim = 8192
scale = 0.7

SMALL = {"batch_size": 12, "dim": 96}


class Model(nn.Module):
    def __init__(self, dim: int, scale: float):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(dim) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x + self.bias) * self.scale


def get_inputs():
    return [torch.randn(batch_size, dim) * 2.0]


def get_init_inputs():
    return [dim, scale]


def get_extra_inputs():
    # The channel count is fixed by the bias; vary the rows and the rank.
    return [
        [torch.randn(batch_size // 2 + 5, dim) * 2.0],
        [torch.randn(3, batch_size // 4 + 1, dim) * 3.0 - 1.0],
    ]
