"""Row softmax over the last dimension.

Softmax is the most common memory-bound reduction in a transformer (attention
probabilities, classifier heads). Eager PyTorch reads the row several times; a fused
kernel reads it once and writes it once, so the goal is the memory roofline.
"""
import torch
import torch.nn as nn

batch_size = 8192
dim = 8192

SMALL = {"batch_size": 8, "dim": 64}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim) * 3.0]


def get_init_inputs():
    return []


def get_extra_inputs():
    # Odd row counts and a row length that is not a power of two (nor a multiple of 16).
    return [
        [torch.randn(batch_size // 2 + 3, dim + dim // 3 + 5) * 3.0],
        [torch.randn(batch_size // 4 + 1, dim // 2 - 7) * 3.0],
    ]
