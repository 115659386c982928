"""Scaled, causally masked softmax over attention scores.

The middle of unfused attention: scale the scores, hide future positions with -inf,
softmax each row. Eager PyTorch builds the mask, writes the masked copy and reads it
back; a kernel can compute the mask from row and column indices and skip the masked
part of each row entirely.
"""
import torch
import torch.nn as nn

batch_size = 4
num_heads = 16
seq_len = 1024
scale = 0.125  # 1 / sqrt(head_dim) for head_dim = 64

SMALL = {"batch_size": 2, "num_heads": 2, "seq_len": 24}


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        n = scores.shape[-1]
        causal = torch.ones(n, n, dtype=torch.bool, device=scores.device).triu(diagonal=1)
        masked = (scores * self.scale).masked_fill(causal, float("-inf"))
        return torch.softmax(masked, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, num_heads, seq_len, seq_len) * 8.0]


def get_init_inputs():
    return [scale]


def get_extra_inputs():
    n = seq_len // 2 + 5
    return [
        [torch.randn(batch_size + 1, num_heads // 2 + 1, n, n) * 8.0],
        [torch.randn(1, 3, seq_len + 3, seq_len + 3) * 8.0],
    ]
