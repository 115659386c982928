"""A small decoder-only transformer, written the way research code usually is.

Shapes: x is (batch, seq, dim) → (batch, seq, dim). Nothing here is tuned; that is the point.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

import kernelevo

ROPE_BASE = 10_000.0
GELU_C = math.sqrt(2.0 / math.pi)


@dataclass
class Config:
    dim: int = 64
    n_heads: int = 4
    n_layers: int = 2
    hidden_mult: int = 4
    vocab: int = 256
    max_seq: int = 128


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def rope_tables(seq: int, head_dim: int, device=None):
    inv = 1.0 / (ROPE_BASE ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    t = torch.arange(seq, device=device).float()
    freqs = torch.outer(t, inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


@kernelevo.example(lambda: (torch.randn(8, 256), torch.randn(256)))
def fused_bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """tanh-approximated GELU of x + bias (as in GPT-2)."""
    y = x + bias
    return 0.5 * y * (1.0 + torch.tanh(GELU_C * (y + 0.044715 * torch.pow(y, 3))))


class RMSNorm(nn.Module):
    """Root-mean-square layer norm: x → x · rsqrt(mean(x²) + eps) · w."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # one pass for the statistic, one for the scale
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


class Attention(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.head_dim = cfg.dim // cfg.n_heads
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim, bias=False)
        self.proj = nn.Linear(cfg.dim, cfg.dim, bias=False)

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        b, s, _ = t.shape
        return t.view(b, s, self.n_heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = self._split(q), self._split(k), self._split(v)
        cos, sin = rope_tables(s, self.head_dim, x.device)
        q, k = apply_rotary(q, k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, s, d))


# kernelevo: inputs = (torch.randn(4, 32, 64),)
# kernelevo: init = (64, 4)
class SwiGLU(nn.Module):
    def __init__(self, dim: int, mult: int = 4):
        super().__init__()
        hidden = mult * dim
        self.w12 = nn.Linear(dim, 2 * hidden, bias=False)
        self.w3 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        a, b = self.w12(x).chunk(2, dim=-1)
        return self.w3(F.silu(a) * b)


class Block(nn.Module):
    class ScaledResidual(nn.Module):
        """Residual branch with a learned scalar gate (nested on purpose)."""

        def __init__(self, fn: nn.Module):
            super().__init__()
            self.fn = fn
            self.gate = nn.Parameter(torch.zeros(()))

        def forward(self, x, *args):
            return x + torch.tanh(self.gate) * self.fn(x, *args)

    def __init__(self, cfg: Config):
        super().__init__()
        self.norm1 = RMSNorm(cfg.dim)
        self.attn = Block.ScaledResidual(Attention(cfg))
        self.norm2 = RMSNorm(cfg.dim)
        self.mlp = SwiGLU(cfg.dim, cfg.hidden_mult)

    def forward(self, x):
        x = self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Transformer(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layers)])
        self.norm = RMSNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))

    @torch.no_grad()
    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


@torch.no_grad()
def init_weights(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=0.02)
