"""What the sandbox costs a verdict: the same work with and without bubblewrap, as ratios.

Three figures, each measured sandboxed and unsandboxed (`--no-sandbox`) in this process,
the two alternating:
- spawn: start a process that does nothing (`python -c pass`) and wait for it;
- worker start: a worker process from spawn to its `ready` frame (imports torch);
- verdict: a full verdict of a correct Triton softmax through one warm Evaluator, a fresh
  variant each time (a nonce in a comment, so no cache answers), median of --repeat.

Usage: python bench/sandbox_latency.py [--repeat 5] [--device cpu|cuda]
Expected: about 2 minutes on the 2-core CPU machine. The ratio to watch is the verdict's
(sandbox / none); the goal is that it stays within a few percent.
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

from kernelevo.evaluate import Evaluator  # noqa: E402
from kernelevo.sandbox import SandboxSpec, spawn  # noqa: E402
from kernelevo.verify import verify_candidate  # noqa: E402
from kernelevo.worker.pool import Worker  # noqa: E402

TASK = ROOT / "examples" / "softmax.py"
GOOD = (ROOT / "tests" / "candidates" / "softmax" / "triton_ok.py").read_text()


def spawn_s(isolate: bool) -> float:
    t0 = time.perf_counter()
    with spawn(SandboxSpec([sys.executable, "-c", "pass"], isolate=isolate), channel=False) as p:
        p.wait(60)
    return time.perf_counter() - t0


def worker_start_s(device: str, isolate: bool) -> float:
    t0 = time.perf_counter()
    with Worker(device, isolate=isolate) as w:
        w.ensure_started()
        return time.perf_counter() - t0


def evaluator(device: str, isolate: bool) -> Evaluator:
    ev = Evaluator(device)
    for w in (ev.runner, ev.compiler):
        w.isolate = isolate
    ev.warm()
    return ev


def verdict_s(ev: Evaluator, device: str, folder: Path) -> float:
    cand = folder / f"cand_{time.time_ns()}.py"
    cand.write_text(f"{GOOD}\n# nonce {time.time_ns()}\n")
    v = verify_candidate(TASK, cand, evaluator=ev, device=device, use_cache=False)
    assert v.status == "verified" and v.isolation == ("sandbox" if ev.runner.isolate else "none"), (
        v.reason
    )
    return v.elapsed_s


def interleaved(fn, n: int) -> dict[bool, float]:
    """Median per mode, the modes alternating (and the first of each pair swapping) so the
    machine's drift and other users' load fall on both alike."""
    got: dict[bool, list[float]] = {False: [], True: []}
    for i in range(n):
        for isolate in (False, True) if i % 2 else (True, False):
            got[isolate].append(fn(isolate))
    return {k: statistics.median(v) for k, v in got.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = ap.parse_args()
    rows = [
        ("spawn (python -c pass)", interleaved(spawn_s, 3 * args.repeat)),
        (
            "worker start to ready",
            interleaved(lambda iso: worker_start_s(args.device, iso), max(2, args.repeat // 2)),
        ),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        evs = {iso: evaluator(args.device, iso) for iso in (False, True)}
        try:
            for ev in evs.values():  # the first verdict pays for the workers' first compile
                verdict_s(ev, args.device, Path(tmp))
            rows.append(
                (
                    "verdict (warm evaluator)",
                    interleaved(
                        lambda iso: verdict_s(evs[iso], args.device, Path(tmp)), args.repeat
                    ),
                )
            )
        finally:
            for ev in evs.values():
                ev.close()
    print(f"device {args.device}, median of {args.repeat} (spawn: {3 * args.repeat})")
    print(f"{'what':<28}{'none s':>10}{'sandbox s':>11}{'ratio':>8}")
    for name, got in rows:
        print(f"{name:<28}{got[False]:>10.3f}{got[True]:>11.3f}{got[True] / got[False]:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
