"""Train the toy transformer on random tokens for a few steps (a smoke test, not science)."""
import argparse
import time

import torch
import torch.nn as nn
from torch.nn import functional as Fn

from model import Config, Transformer, init_weights


class LabelSmoothingLoss(nn.Module):
    def __init__(self, smoothing: float = 0.1):
        super().__init__()
        self.smoothing = smoothing

    def forward(self, logits, target):
        logp = Fn.log_softmax(logits, dim=-1)
        nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        smooth = -logp.mean(dim=-1)
        return ((1 - self.smoothing) * nll + self.smoothing * smooth).mean()


def batches(cfg: Config, batch: int, steps: int):
    for _ in range(steps):
        tokens = torch.randint(0, cfg.vocab, (batch, cfg.max_seq // 4 + 1))
        yield tokens[:, :-1], tokens[:, 1:]


def train(model, loss_fn, cfg, steps, lr=3e-4):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for step, (x, y) in enumerate(batches(cfg, 4, steps)):
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f}")


@torch.no_grad()
def evaluate(model, loss_fn, cfg):
    model.eval()
    x, y = next(batches(cfg, 4, 1))
    return loss_fn(model(x), y).item()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    cfg = Config()
    model = Transformer(cfg)
    model.apply(init_weights)
    t0 = time.time()
    train(model, LabelSmoothingLoss(), cfg, args.steps)
    print(f"eval loss {evaluate(model, LabelSmoothingLoss(), cfg):.3f} in {time.time() - t0:.1f}s")
