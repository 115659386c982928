"""LayerNorm over the last dimension, with learned weight and bias.

The normalisation in most encoders and in GPT-2-style decoders. It needs two
statistics per row (mean and variance) before it can write anything, which makes it
a good test of a kernel that keeps the row on chip instead of reading it three times.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
dim = 4096
eps = 1e-5

SMALL = {"batch_size": 10, "dim": 80}


class Model(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)
        self.bias = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (self.dim,), self.weight, self.bias, self.eps)


def get_inputs():
    # A non-zero mean and a scale other than one, as real activations have.
    return [torch.randn(batch_size, dim) * 2.0 + 0.5]


def get_init_inputs():
    return [dim, eps]


def get_extra_inputs():
    return [
        [torch.randn(batch_size // 2 + 3, dim) * 0.5 - 1.0],
        [torch.randn(2, batch_size // 4 + 1, dim) * 4.0],
    ]
