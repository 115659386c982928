"""The judge's first verdict work, paid at start-up instead of by the first candidate.

The first verification in a fresh judge process spends seconds importing what torch loads
lazily and creating the CUDA context; the first torch.compile another 5 s. Running one
tiny built-in task's reference and baselines before answering `ready` moves that cost
to judge start, which a search overlaps with its first proposals. `kernelevo verify` (one
verdict) and the verification service ask for the light warm-up: CUDA and the lazy imports only,
since their baselines are usually stored and torch.compile is then not needed. (Candidate processes
are fresh per candidate and cannot be warmed this way; the pair below is also the
smallest honest candidate, checked by the tests.)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelevo.judge import requests as rq
from kernelevo.worker import protocol

TASK = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2.0 + 1.0


def get_inputs():
    return [torch.randn(4096, 256)]


def get_init_inputs():
    return []
"""

CANDIDATE = """import torch
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
"""


# TASK's bytes (one input set, its output, no weights) and extra shapes (none)
KNOWN: dict[str, Any] = {"need": [4096 * 256 * 4, 4096 * 256 * 4, 0], "n_extra": 0}


def warm_up(handle: Any) -> float:
    """Seconds spent. `handle` is the judge's request handler: the built-in task goes through probe,
    an input set, the reference and (on a GPU) the baselines (CUDA context, lazy imports, the first
    torch.compile), so the first real candidate does not pay for them."""
    import torch

    gpu = torch.cuda.is_available()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kernelevo-warmup-") as tmp:
        task = Path(tmp) / "warmup_task.py"
        task.write_text(TASK)
        common: dict[str, Any] = {
            "task_path": str(task),
            "task_hash": "warmup",
            "size": "default",
            "device": "cuda" if gpu else "cpu",
        }
        # one verdict or the service: no torch.compile
        light = os.environ.get("KERNELEVO_WORKER_WARMUP") == "light"
        timing: tuple[rq.JudgeRequest[Any], ...] = (
            (
                rq.TimingSets(seed=1),
                rq.Baselines(key="warmup", max_time_s=0.5),
                rq.Bound(key="warmup", candidate_ms=1.0),
            )
            if gpu and not light
            else ()
        )  # bound: the device peaks
        try:
            # light: Begin is told the task's need, as a stored probe tells it, so nothing runs
            # on meta tensors (their checks import sympy, ~0.8 s) where a stored task needs none
            steps: tuple[rq.JudgeRequest[Any], ...] = (
                *(() if light else (rq.Probe(**common, seed=1),)),
                rq.Begin(**common, seed=1, exchange=tmp, **(KNOWN if light else {})),
                rq.Inputs(set="w", seed=1),
                rq.Reference(set="w"),
                *timing,
                rq.End(),
            )
            for request in steps:
                reply = handle(request.wire())
                protocol.mark(f"warm_up_{request.op}")  # probe or begin: CUDA's start on a GPU
                if "error" in reply or "task_error" in reply:
                    print(f"kernelevo judge warm-up: {reply}", file=sys.stderr)
                    break
            if gpu:  # the comparison's kernels load on their first use (0.2 s of a first verdict)
                from kernelevo.checks.compare import compare_outputs

                out = torch.randn(4096, device="cuda")
                compare_outputs(out, out.clone())
                protocol.mark("warm_up_compare")
        except (
            Exception
        ) as exc:  # a failed warm-up only means the first candidate pays the start-up cost
            print(f"kernelevo judge warm-up failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return time.perf_counter() - t0
