"""Mid-edit: one function has a syntax error; the rest must still be found."""
import torch
import torch.nn as nn


class GatedMLP(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(dim, dim)

    def forward(self, x):
        a, g = self.up(x).chunk(2, dim=-1)
        return self.down(a * torch.sigmoid(g))


def half_written(x):
    y = torch.exp(x
    return y.sum(


def layer_scale(x: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(gamma).view(1, -1, 1, 1)


class Normalize(nn.Module):
    def forward(self, x):
        return torch.nn.functional.normalize(x, dim=-1)
