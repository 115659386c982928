"""The offline search (no model) on every bundled example and any KernelBench folder.

    python bench/offline_suite.py [FOLDER...] [--tune-evals N] [--out FILE]

Prints, per task: eager, torch.compile and the best offline kernel (ms), its speedups,
roofline fraction and the evaluations used, then geometric means. A kernel is "proposed"
only when it beats both baselines beyond the timing noise; otherwise the user keeps the better
baseline.
Without a GPU it verifies only and says that speed was not measured.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folders", nargs="*", help="extra KernelBench-format task folders")
    ap.add_argument("--tune-evals", type=int, default=12)
    ap.add_argument("--only", help="comma-separated task names")
    ap.add_argument("--gpus", help="comma-separated GPU indexes (default: all visible)")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "offline_suite.json"))
    args = ap.parse_args()

    from kernelevo.machine import probe
    from kernelevo.optimize import optimize_task
    from kernelevo.search.loop import SearchConfig
    from kernelevo.store import Store

    device = "cuda" if probe().has_gpu else "cpu"
    tasks = sorted((ROOT / "examples").glob("*.py"))
    for folder in args.folders:
        tasks += sorted(p for p in Path(folder).glob("*.py") if not p.name.startswith("_"))
    if args.only:
        keep = set(args.only.split(","))
        tasks = [t for t in tasks if t.stem in keep]
    store = Store(Path(tempfile.mkdtemp(prefix="offline_suite_")) / "store.sqlite")
    rows = []
    from kernelevo.scale.local import LocalDispatcher

    # one dispatcher for the whole suite: the workers start (and warm up) once, not per task
    dispatcher = LocalDispatcher(device, store=store, gpus=[int(g) for g in args.gpus.split(",")] if args.gpus else None)
    dispatcher.warm()
    for task in tasks:
        t0 = time.monotonic()
        cfg = SearchConfig(provider="offline", device=device, iterations=0, tune_evals=args.tune_evals, seed=0)
        try:
            result = optimize_task(task, cfg, store=store, dispatcher=dispatcher)
        except Exception as exc:  # one broken task must not hide the others
            rows.append({"task": task.stem, "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        best = result.best
        cands = store.candidates(result.run_id)
        t = (best.verdict.get("timings") or {}) if best else {}
        r = (best.verdict.get("roofline") or {}) if best else {}
        frac = r.get("flop_fraction") if r.get("bound") == "compute" else r.get("bw_fraction")
        rows.append({"task": task.stem, "status": result.status, "origin": best.origin if best else None,
                     "eager_ms": t.get("eager_ms"), "compile_ms": t.get("compile_ms"), "best_ms": t.get("candidate_ms"),
                     "speedup_eager": t.get("speedup_eager"), "speedup_compile": t.get("speedup_compile"),
                     "roofline_fraction": frac, "evaluations": len(cands),
                     "verified": sum(c["status"] == "verified" for c in cands), "proposed": result.status == "improved",
                     "not_verified": [{"origin": c.get("origin"), "status": c["status"],
                                       "reason": (c["verdict"].get("reason") or "")[:200]}
                                      for c in cands if c["status"] != "verified"],
                     "elapsed_s": round(time.monotonic() - t0, 1)})
        print(f"done {task.stem}: {json.dumps(rows[-1])}", flush=True)
    dispatcher.close()
    f = lambda x, d=3: f"{x:.{d}f}" if isinstance(x, (int, float)) else "-"  # noqa: E731
    print(f"offline suite on {device} ({probe().gpus[0] if probe().gpus else 'no GPU: speed not measured'})")
    print(f"{'task':<18}{'eager ms':>10}{'compile':>10}{'offline':>10}{'x eager':>9}{'x comp':>8}{'roof':>6}"
          f"{'evals':>6}  proposed  origin")
    for row in rows:
        if "error" in row:
            print(f"{row['task']:<18} ERROR {row['error']}")
            continue
        print(f"{row['task']:<18}{f(row['eager_ms'], 4):>10}{f(row['compile_ms'], 4):>10}{f(row['best_ms'], 4):>10}"
              f"{f(row['speedup_eager'], 2):>9}{f(row['speedup_compile'], 2):>8}"
              f"{f(100 * row['roofline_fraction'], 0) if row['roofline_fraction'] else '-':>6}{row['evaluations']:>6}"
              f"  {'yes' if row['proposed'] else 'no':<8}  {row['origin']}")
    ok = [r for r in rows if "error" not in r and r.get("eager_ms")]
    if ok:
        g_comp = geomean([r["eager_ms"] / r["compile_ms"] for r in ok if r.get("compile_ms")])
        g_off = geomean([r["speedup_eager"] for r in ok if r.get("speedup_eager")])
        # what the user runs: the proposed kernel, else the better baseline
        g_user = geomean([r["eager_ms"] / (r["best_ms"] if r["proposed"] else min(r["eager_ms"], r["compile_ms"] or r["eager_ms"]))
                          for r in ok])
        slower = [r["task"] for r in ok if r["proposed"] and r["best_ms"] > min(r["eager_ms"], r["compile_ms"] or 1e9)]
        print(f"geomean speedup over eager: torch.compile {f(g_comp, 2)}x · best offline kernel {f(g_off, 2)}x · "
              f"what KernelEvo ships (kernel if proposed, else better baseline) {f(g_user, 2)}x")
        print(f"GOAL geomean offline > torch.compile: {'PASS' if g_off and g_comp and g_off > g_comp else 'FAIL'}; "
              f"proposed kernels slower than the better baseline: {slower or 'none'}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"device": device, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
