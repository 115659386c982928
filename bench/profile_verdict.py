"""Where a verdict's time goes: phases of each request and the worker's own cProfile.

Runs one Evaluator (as a search does) with KERNELEVO_WORKER_PROFILE set, so every
worker request is profiled. Verdicts, in order: a warm-up variant (pays the worker start
and torch.compile baseline), a cold variant (fresh Triton source), the same variant again
(every compile cache hits), then the CUDA fast path cold. Prints each verdict's phases and
the top functions (cumulative time) of the cold variant's verify and measure requests.
With `--candidate FILE` (repeatable) the verdicts are those files instead, each twice (the first
pays the baselines and the compile, the second only the verdict): how a real task's candidate
spends its seconds at the task's own sizes (a KernelBench task's library-epilogue kernel, say).

Usage: python bench/profile_verdict.py [--task examples/softmax.py] [--candidate FILE]... [--top 25]
    [--out DIR]
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


def _top(spent: dict[str, float] | None, n: int = 4) -> str:
    items = sorted((spent or {}).items(), key=lambda kv: -kv[1])[:n]
    return " ".join(f"{k} {v:.2f}" for k, v in items)


def phase_table(rows: list[dict]) -> str:
    """One line per verdict: where its seconds went, engine-side wall time per phase and per op."""
    head = (
        "| verdict | status | total s | compile-ahead | probe | load | sets (n: sum) | checks | "
        "timing: candidate / baselines / rest | transport | judge ops (s) | candidate ops (s) |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        v = r["verify_phases"] or {}
        m = r["measure_phases"] or {}
        sets = v.get("per_set_s") or []
        checks = v.get("checks_s")
        timing = ""
        if m:
            cand, base = m.get("candidate_timing_s", 0.0), m.get("baselines_s", 0.0)
            rest = (v.get("total_s") or 0) - (checks or 0) - cand - base
            timing = f"{cand:.2f} / {base:.2f}{' (stored)' if m.get('baselines_stored') else ''} / {rest:.2f}"
        lines.append(
            f"| {r['kind']} {r['backend']} | {r['status']} | {r['total_s']:.2f} | "
            f"{v.get('precompile_s', 0):.2f} | {v.get('probe_s', 0):.2f} | {v.get('load_s') or 0:.2f} | "
            f"{len(sets)}: {sum(sets):.2f} | {checks or 0:.2f} | {timing} | {v.get('transport', '')} | "
            f"{_top(v.get('judge_ops_s'))} | {_top(v.get('candidate_ops_s'))} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default=str(ROOT / "examples" / "softmax.py"))
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--slowest", type=int, default=3, help="judge profiles shown (slowest first)")
    ap.add_argument("--budget-s", type=float, default=0, help="start no verdict past this many s")
    ap.add_argument(
        "--gap-s",
        type=float,
        default=0.0,
        help="seconds between verdicts (a search's wait for the model): what the spare does meanwhile",
    )
    ap.add_argument(
        "--candidate",
        action="append",
        default=[],
        type=Path,
        help="a candidate file for --task (repeatable): each verified twice instead of the variants",
    )
    ap.add_argument(
        "--out",
        default=None,
        help="folder for the .prof files and verdicts (default: a temp folder)",
    )
    args = ap.parse_args()
    root = Path(args.out or tempfile.mkdtemp(prefix="kernelevo-profile-"))
    prof_dir = root / "prof"
    prof_dir.mkdir(parents=True, exist_ok=True)
    prof_dir.chmod(
        0o777
    )  # the judge writes here as uid 0 without capabilities, the others as their own uid
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
    if args.candidate:
        plan = []
        for i, cand in enumerate(args.candidate):
            paths[f"file{i}"] = cand.resolve()
            plan += [("first", cand.stem, f"file{i}"), ("again", cand.stem, f"file{i}")]
    rows = []
    t_start = time.perf_counter()
    with Evaluator(device) as ev:
        ev.warm()
        start_s = time.perf_counter() - t_start
        for kind, backend, name in plan:
            if args.budget_s and time.perf_counter() - t_start > args.budget_s:
                print(f"budget of {args.budget_s:g} s spent: {kind} {backend} not run", flush=True)
                break
            if name not in paths:
                paths[name] = write_variant(root, backend)
            if rows and args.gap_s:
                time.sleep(args.gap_s)
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
            print(phase_table([row]).splitlines()[-1], flush=True)
    (root / "rows.json").write_text(json.dumps(rows, indent=1))
    cold = next(
        (r for r in rows if r["kind"] == "cold" and r["backend"] == "triton"),
        rows[-1] if rows else None,
    )
    slowest = sorted(
        cold["profiles"] if cold else [], key=lambda n: -pstats.Stats(str(prof_dir / n)).total_tt
    )[: args.slowest]
    for name in slowest:
        print(f"\n=== {name}: top {args.top} by cumulative time", flush=True)
        stats = pstats.Stats(str(prof_dir / name), stream=sys.stdout)
        stats.strip_dirs().sort_stats("cumulative").print_stats(args.top)
    print(f"\nworkers started in {start_s:.1f} s (judge warm-up included)")
    print(phase_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
