"""A GPU worker's first verdict, paid at start-up instead of by the first candidate.

The first verification in a fresh process spends 5-8 s importing what torch loads
lazily (dispatch modes, Inductor, Triton's launcher) and creating the CUDA context; the
first torch.compile another 5 s. Running one tiny built-in task through the same
verify and measure code before answering `ready` moves that cost to worker start,
which a search overlaps with its first proposals.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

TASK = '''import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2.0 + 1.0


def get_inputs():
    return [torch.randn(4096, 256)]


def get_init_inputs():
    return []
'''

CANDIDATE = '''import torch
import triton
import triton.language as tl


@triton.jit
def _affine(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 1.0, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _affine[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
'''


def warm_up() -> float:
    """Seconds spent; 0 where there is no GPU (CPU and compile workers start as they are)."""
    import torch

    if not torch.cuda.is_available():
        return 0.0
    t0 = time.perf_counter()
    from kernelevo.verify.checks import run_verification
    from kernelevo.worker.measure import measure

    with tempfile.TemporaryDirectory(prefix="kernelevo-warmup-") as tmp:
        task, cand = Path(tmp) / "warmup_task.py", Path(tmp) / "warmup_candidate.py"
        task.write_text(TASK)
        cand.write_text(CANDIDATE)
        req = {"task_path": str(task), "candidate_path": str(cand), "device": "cuda", "size": "default", "seed": 1,
               "backend": "triton", "max_time_s": 0.5}
        try:
            verdict = run_verification(req)
            if verdict.get("status") == "verified":
                measure(req)
                from kernelevo.verify.opwatch import profile_kernels

                profile_kernels(lambda: torch.ones(1024, device="cuda") * 2)
            else:
                print(f"kernelevo worker warm-up: {verdict.get('status')}: {verdict.get('reason')}", file=sys.stderr)
        except Exception as exc:  # a failed warm-up only means the first candidate pays the start-up cost
            print(f"kernelevo worker warm-up failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return time.perf_counter() - t0
