"""A stand-in for `kernelevo optimize ... --progress json` (tests only).

Speaks the progress protocol of docs/PROTOCOLS.md and writes a result to the store like
the real search. Behaviour comes from a JSON control file (`--control PATH`, placed
before the real arguments by the server's `searchCommand` setting):
{"mode": "improve" | "slow" | "crash" | "fail", "iterations": 3, "delay": 0.05,
 "compile_speedup": 1.5 (below 1.0: verified and faster than eager, but not than torch.compile),
 "speedup": 2.31, "pidfile": "...", "worker": true, "burn": false,
 "error_message": "..." (what "fail" reports),
 "term_delay": 0.0 (seconds it takes to stop once asked, as a search closing its workers does)}
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import uuid

from kernelevo.outcome import OutcomeKind, RunOutcome
from kernelevo.search.events import Done, ProgressEvent, SearchEvent, SearchFailed, Started


def emit(event: SearchEvent) -> None:
    """The real search's records (kernelevo/search/events.py), so the stand-in cannot drift."""
    sys.stdout.write(event.line() + "\n")
    sys.stdout.flush()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--control", required=True)
    ap.add_argument("spec")
    ap.add_argument("--progress")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--provider")
    ap.add_argument("--model")
    ap.add_argument("--budget-tokens")
    ap.add_argument("--budget-usd")
    ap.add_argument("--iterations")
    args = ap.parse_args()
    with open(args.control) as fh:
        ctl = json.load(fh)
    path, target_id = args.spec.rsplit("::", 1)
    run_id = "fake-" + uuid.uuid4().hex[:8]
    worker = None
    if ctl.get("worker"):
        worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    if ctl.get("pidfile"):
        with open(ctl["pidfile"] + ".tmp", "w") as fh:
            json.dump(
                {
                    "pid": os.getpid(),
                    "worker": worker.pid if worker else None,
                    "argv": sys.argv[1:],
                    "env_store": os.environ.get("KERNELEVO_STORE"),
                },
                fh,
            )
        os.replace(ctl["pidfile"] + ".tmp", ctl["pidfile"])  # readers never see half a file

    def on_term(signum, frame):
        time.sleep(float(ctl.get("term_delay", 0.0)))
        emit(Done(run_id, "cancelled", RunOutcome(OutcomeKind.CANCELLED).to_dict()))
        if worker:
            worker.kill()
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    mode = ctl.get("mode", "improve")
    iterations = int(ctl.get("iterations", 3))
    emit(Started(run_id, task=args.spec, provider=args.provider or "offline", backend=args.backend))
    best = 1.0
    for i in range(1, iterations + 1):
        if ctl.get("burn"):  # keep a core busy, as a real search's worker does
            end = time.monotonic() + float(ctl.get("delay", 0.05))
            while time.monotonic() < end:
                sum(k * k for k in range(1000))
        else:
            time.sleep(float(ctl.get("delay", 0.05)))
        best = max(best, 1.0 + (float(ctl.get("speedup", 2.31)) - 1.0) * i / iterations)
        emit(
            ProgressEvent(
                run_id,
                "iteration",
                i,
                iterations,
                "llm",
                "verified",
                round(best, 2),
                f"iteration {i} of {iterations} (llm): verified, {best:.2f}x",
                candidate_id=2 * i,
                iteration=i,
                evaluated=2 * i,
                best_speedup=round(best, 2),
                best_speedup_compile=round(best / 1.5, 2),
                verified=True,
                tokens=1000 * i,
                cost_usd=0.01 * i,
            )
        )
        if mode == "crash" and i == 1:
            sys.stderr.write(
                "Traceback (most recent call last):\nRuntimeError: fake search blew up\n"
            )
            sys.stderr.flush()
            os._exit(3)
    if mode == "fail":
        emit(SearchFailed(ctl.get("error_message", "no candidate compiled"), run_id=run_id))
        emit(
            Done(
                run_id,
                "failed",
                RunOutcome(OutcomeKind.FAILED, reasons=(ctl.get("error_message", ""),)).to_dict(),
                tokens=1000 * iterations,
            )
        )
        return 1
    speedup, vs_compile = float(ctl.get("speedup", 2.31)), float(ctl.get("compile_speedup", 1.5))
    outcome = write_result(path, target_id, run_id, speedup, vs_compile, args.backend, iterations)
    emit(
        Done(
            run_id,
            outcome["kind"],
            outcome,
            best_speedup=speedup,
            best_speedup_compile=vs_compile,
            tokens=1000 * iterations,
            cost_usd=0.01 * iterations,
        )
    )
    if worker:
        worker.kill()
    return 0


def write_result(
    path: str,
    target_id: str,
    run_id: str,
    speedup: float,
    vs_compile: float,
    backend: str,
    iterations: int,
) -> dict:
    from kernelevo.outcome import judge
    from kernelevo.store import ResultSummary, Store
    from kernelevo.targets.detect import detect_source

    outcome = judge(
        {"speedup_eager": speedup, "speedup_compile": vs_compile}, verified=True, device="cuda"
    ).to_dict()

    with open(path) as fh:
        source = fh.read()
    target = next(t for t in detect_source(source, path).targets if t.id == target_id)
    store_path = os.environ["KERNELEVO_STORE"]
    cand_dir = os.path.join(os.path.dirname(store_path), "candidates", run_id)
    os.makedirs(cand_dir, exist_ok=True)
    cand = os.path.join(cand_dir, "candidate.py")
    with open(cand, "w") as fh:
        fh.write(CANDIDATE)
    with Store(store_path) as store:
        store.create_run(
            task_path=path,
            task_hash="fake",
            config={},
            source_file=os.path.realpath(path),
            target_id=target_id,
            source_hash=target.source_hash,
            run_id=run_id,
        )
        # What Apply needs to know about the verified inputs (see kernelevo/targets/apply.py).
        store.update_run(
            run_id,
            status=outcome["kind"],
            summary={
                "outcome": outcome,
                "dtypes": ["float32"],
                "devices": ["cuda"],
                "shapes": [[[2, 5, 96]], [[4, 3, 96]]],
                "init_args": [96, 1e-6],
                "speedups": {"eager": speedup, "compile": 0.7 * speedup},
            },
        )
        store.put_result(
            ResultSummary(
                run_id=run_id,
                source_file=path,
                target_id=target_id,
                status=outcome["kind"],
                outcome=outcome,
                backend="triton" if backend == "auto" else backend,
                gpu="CPU (Triton interpreter)",
                created_at=time.time(),
                reference_ms=1.0,
                compile_ms=0.7,
                best_ms=1.0 / speedup,
                speedup_eager=speedup,
                speedup_compile=vs_compile,
                tokens=1000 * iterations,
                cost_usd=0.01 * iterations,
                verified=True,
                candidate_path=cand,
            )
        )
    return outcome


CANDIDATE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    rms = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * n_cols + cols, x * rms * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        _rms_kernel[(x2.shape[0],)](x2, self.weight, out, x2.shape[1], self.eps,
                                    BLOCK=triton.next_power_of_2(x2.shape[1]))
        return out.reshape(x.shape)
"""

if __name__ == "__main__":
    raise SystemExit(main())
