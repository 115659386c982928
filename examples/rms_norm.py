"""RMSNorm over the hidden dimension (LLaMA-style), with a learned per-channel weight.

Every layer of a modern LLM runs it twice. Eager PyTorch launches one kernel per op
(square, mean, add, rsqrt, two multiplies) and re-reads the activations each time; a
fused kernel reads each row once. The weight is random, so a kernel that forgets it fails.
"""
import torch
import torch.nn as nn

batch_size = 8
seq_len = 1024
hidden = 4096
eps = 1e-6

SMALL = {"batch_size": 2, "seq_len": 5, "hidden": 96}


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [hidden, eps]


def get_extra_inputs():
    # The hidden size is fixed by the weight; vary the number of rows and the layout.
    return [
        [torch.randn(batch_size + 1, seq_len // 2 + 1, hidden) * 2.0],
        [torch.randn(seq_len // 4 + 1, hidden) + 0.5],
    ]
