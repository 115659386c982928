"""Where a sandboxed worker's cold start goes, step by step, for the three workers of a verdict.

Starts the runner host, the compile worker and the judge (light warm-up, as a one-shot verify
does) one at a time, --repeat times each, and prints the median of each start part (the marks
the workers make with `protocol.mark`) and of the whole start; then the first compile-ahead of a
Triton softmax on a freshly started compile worker (meta tensors, as for a real candidate).
One at a time, not side by side as `verify` starts them: the parts are then the process's own
cost, not the machine's contention.

Usage: python bench/worker_start.py [--repeat 3] [--device cpu|cuda]
Expected: about a minute on the 2-core CPU machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelevo.verify.compile_ahead import precompile  # noqa: E402
from kernelevo.worker.pool import Worker  # noqa: E402

TASK = ROOT / "examples" / "softmax.py"
CANDIDATE = ROOT / "tests" / "candidates" / "softmax" / "triton_ok.py"


def workers(device: str) -> dict[str, Worker]:
    return {
        "runner host": Worker(device, module="kernelevo.runner.host"),
        "compile worker": Worker("compile", env={"KERNELEVO_COMPILE_WARMUP": "triton"}),
        "judge": Worker(
            device, module="kernelevo.judge.process", env={"KERNELEVO_WORKER_WARMUP": "light"}
        ),
    }


def start_once(worker: Worker) -> tuple[float, dict[str, float]]:
    t0 = time.perf_counter()
    worker.start()
    total = time.perf_counter() - t0
    parts = dict(worker.start_parts)
    worker.close()
    return total, parts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    rows = []
    for name in workers(args.device):
        runs = [start_once(workers(args.device)[name]) for _ in range(args.repeat)]
        steps = [k for k in runs[0][1] if all(k in p for _, p in runs)]
        parts = ", ".join(f"{k} {statistics.median(p[k] for _, p in runs):.2f}" for k in steps)
        rows.append((name, statistics.median(t for t, _ in runs), parts))
    with (
        tempfile.TemporaryDirectory() as tmp,
        Worker("compile", env={"TRITON_CACHE_DIR": tmp}) as w,
    ):
        w.start()
        t0 = time.perf_counter()
        ahead = precompile(w, TASK, CANDIDATE, "triton", device="cpu", size="default")
        rows.append(("first compile-ahead", time.perf_counter() - t0, ahead.status))
    print(f"{'worker':<20} {'median s':>8}  parts (median s)")
    for name, seconds, parts in rows:
        print(f"{name:<20} {seconds:>8.2f}  {parts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
