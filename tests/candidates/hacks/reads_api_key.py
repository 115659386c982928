# expect: rejected
# task: softmax
# reason: import of os is not allowed
"""Untrusted code must never see API keys. This candidate is a correct Triton softmax
that refuses to run when it can read ANTHROPIC_API_KEY. The static allowlist refuses its
`import os` before it runs; the worker's scrubbed environment behind that is tested in
tests/test_worker.py (test_candidate_reading_key_sees_nothing)."""
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
            if os.environ.get(name) is not None:
                raise RuntimeError(f"candidate code could read {name}")
        n_cols = x.shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        out = torch.empty_like(x2)
        softmax_kernel[(x2.shape[0],)](x2, out, n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
