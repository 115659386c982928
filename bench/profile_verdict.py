"""Where a verdict's time goes: phases of each request and the worker's own cProfile.

Runs one Evaluator (as a search does) with KERNELEVO_WORKER_PROFILE set, so every
worker request is profiled. Verdicts, in order: a warm-up variant (pays the worker start
and torch.compile baseline), a cold variant (fresh Triton source), the same variant again
(every compile cache hits), then the CUDA fast path cold. Prints each verdict's phases and
the top functions (cumulative time) of the cold variant's verify and measure requests.

Usage: python bench/profile_verdict.py [--task examples/softmax.py] [--top 25] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_latency import fresh_caches, write_variant  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default=str(ROOT / "examples" / "softmax.py"))
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument(
        "--out",
        default=None,
        help="folder for the .prof files and verdicts (default: a temp folder)",
    )
    args = ap.parse_args()
    root = Path(args.out or tempfile.mkdtemp(prefix="kernelevo-profile-"))
    prof_dir = root / "prof"
    prof_dir.mkdir(parents=True, exist_ok=True)
    fresh_caches(Path(tempfile.mkdtemp(prefix="kernelevo-profile-caches-")))
    os.environ["KERNELEVO_WORKER_PROFILE"] = str(prof_dir)
    from kernelevo.evaluate import Evaluator
    from kernelevo.verify import default_device, verify_candidate

    device = default_device()
    print(f"device {device}, task {args.task}, profiles in {prof_dir}", flush=True)
    plan = [
        ("warm-up", "triton", "a"),
        ("cold", "triton", "b"),
        ("cached", "triton", "b"),
        ("cold", "cuda", "c"),
    ]
    paths: dict[str, Path] = {}
    rows = []
    with Evaluator(device) as ev:
        for kind, backend, name in plan:
            if name not in paths:
                paths[name] = write_variant(root, backend)
            before = set(prof_dir.iterdir())
            t0 = time.perf_counter()
            v = verify_candidate(
                args.task, paths[name], evaluator=ev, device=device, use_cache=False
            )
            total = time.perf_counter() - t0
            new = sorted(p.name for p in set(prof_dir.iterdir()) - before)
            row = {
                "kind": kind,
                "backend": backend,
                "status": v.status,
                "total_s": round(total, 3),
                "verify_phases": v.phases,
                "measure_phases": (v.timings or {}).get("phases"),
                "profiles": new,
                "reason": v.reason[:120],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    (root / "rows.json").write_text(json.dumps(rows, indent=1))
    cold = next(r for r in rows if r["kind"] == "cold" and r["backend"] == "triton")
    for name in cold["profiles"]:
        print(f"\n=== {name}: top {args.top} by cumulative time", flush=True)
        stats = pstats.Stats(str(prof_dir / name), stream=sys.stdout)
        stats.strip_dirs().sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
