"""The memory plan on KernelBench v0.1 Level-1 sizes (6-8 GiB inputs per set): peak GPU memory per task.

For each task: the reference alone (probe: memory estimate, task faults), then a full
verification of a candidate (a Triton ReLU for 19_ReLU, timed; for the others the task's own
Model as the candidate: verified on every input set, then rejected by the library-op rule,
which is the point: the memory plan holds through all sets) and the judge's baselines.
Peak memory is the GPU's used memory sampled by nvidia-smi every 100 ms while the task ran
(all processes: judge, candidate, compile worker). Prints one table row per task.

Usage: python bench/judge_memory.py [--tasks 19_ReLU,...] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
HERE = Path(__file__).resolve().parent / "kernelbench_memory"  # our candidate
TASKS = (
    Path(__file__).resolve().parent / "kernelbench" / "level1"
)  # the checked-in KernelBench v0.1 tasks


class Sampler:
    def __init__(self) -> None:
        self.peak_mib = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                out = subprocess.run(
                    ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                    capture_output=True,
                    text=True,
                    timeout=5,
                ).stdout
                self.peak_mib = max(self.peak_mib, max(int(x) for x in out.split()))
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
            self._stop.wait(0.1)

    def __enter__(self) -> Sampler:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()


def shim(task: Path, folder: Path) -> Path:
    """The task's own Model as a candidate (copied: a candidate cannot reach the task's module)."""
    src = task.read_text().replace("class Model(", "class ModelNew(") + "\n\nModel = ModelNew\n"
    path = folder / f"{task.stem}_as_candidate.py"
    path.write_text(src)
    return path


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument(
        "--tasks", default="19_ReLU,23_Softmax,36_RMSNorm_,47_Sum_reduction_over_a_dimension"
    )
    p.add_argument("--out")
    args = p.parse_args()
    import tempfile

    from kernelevo.evaluate import Evaluator
    from kernelevo.task import TaskError, read_task
    from kernelevo.verify import _run_dynamic, verify_candidate

    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="kernelevo-memplan-"))
    with Evaluator("cuda") as ev:
        ev.warm()
        for name in args.tasks.split(","):
            task = TASKS / f"{name}.py"
            cand = HERE / "relu_triton.py" if name == "19_ReLU" else shim(task, tmp)
            t0 = time.perf_counter()
            with Sampler() as s:
                try:
                    if name == "19_ReLU":
                        v = verify_candidate(
                            task,
                            cand,
                            evaluator=ev,
                            device="cuda",
                            use_cache=False,
                            timeout=300,
                            max_time_s=2.0,
                        )
                    else:  # the reference as a candidate: past the static checks, to the judge directly
                        v = _run_dynamic(
                            read_task(task),
                            cand,
                            "triton",
                            [],
                            ev,
                            "cuda",
                            "default",
                            300.0,
                            None,
                            measure=False,
                        )
                    status, reason = v.status, v.reason
                    sets = sum(1 for c in v.checks if c.name.startswith("match["))
                    timings = v.timings
                    phases = v.phases
                except TaskError as exc:
                    status, reason, sets, timings, phases = "task_error", str(exc), 0, {}, {}
            rows.append(
                {
                    "task": name,
                    "status": status,
                    "reason": reason[:300],
                    "sets_matched": sets,
                    "peak_gib": round(s.peak_mib / 1024, 1),
                    "seconds": round(time.perf_counter() - t0, 1),
                    "candidate_ms": timings.get("candidate_ms"),
                    "eager_ms": timings.get("eager_ms"),
                    "transport": phases.get("transport"),
                    "cuda_ipc": phases.get("cuda_ipc"),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    print(f"{'task':38} {'status':12} {'sets':>4} {'peak GiB':>8} {'s':>6}  transport")
    for r in rows:
        print(
            f"{r['task']:38} {r['status']:12} {r['sets_matched']:>4} {r['peak_gib']:>8} {r['seconds']:>6}  "
            f"{r['transport']}"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
