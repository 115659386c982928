"""Mean cross-entropy loss of logits against integer class targets.

The last op of every language-model training step, over a vocabulary of tens of
thousands. It is a row reduction (log-sum-exp) plus a gather and a mean over rows;
eager PyTorch materialises the full log-softmax, a fused kernel never does.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
num_classes = 32000

SMALL = {"batch_size": 16, "num_classes": 100}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets)


def get_inputs():
    logits = torch.randn(batch_size, num_classes) * 2.0
    targets = torch.randint(0, num_classes, (batch_size,))
    return [logits, targets]


def get_init_inputs():
    return []


def get_extra_inputs():
    rows = batch_size // 2 + 3
    cols = num_classes + num_classes // 5 + 3
    more_rows = batch_size // 4 + 1
    fewer_cols = num_classes // 2 + 7
    return [
        [torch.randn(rows, cols) * 4.0, torch.randint(0, cols, (rows,))],
        [torch.randn(more_rows, fewer_cols) + 1.0, torch.randint(0, fewer_cols, (more_rows,))],
    ]
