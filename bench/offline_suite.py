"""The offline search (no model) over the bundled examples and the KernelBench tasks in bench/kernelbench.

    python bench/offline_suite.py [FOLDER...] [--set all|examples|kernelbench] [--only A,B]
        [--shard I/N] [--jobs K] [--deadline S] [--resume ROWS.jsonl] [--tune-evals N] [--out DIR]

Per task: eager, torch.compile and the best offline kernel (ms), where the best came from,
whether it is proposed (faster than both baselines beyond the timing noise) and, when not,
why (one line per source that offered nothing, or why its candidates lost), the wall time.
Each finished task is appended to DIR/offline_suite.jsonl at once, so a call cut short keeps
what it did; `--resume` skips the tasks a rows file already holds, `--shard` takes every N-th,
and `--deadline` starts no task once the time left is below the slowest task so far.
Without a GPU it verifies only and says that speed was not measured.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KERNELBENCH = ROOT / "bench" / "kernelbench"


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def task_name(path: Path) -> str:
    """`L2_12_Gemm_Multiply_LeakyReLU` for a KernelBench task, the file's stem for an example."""
    level = path.parent.name
    return f"L{level.removeprefix('level')}_{path.stem}" if level.startswith("level") else path.stem


def find_tasks(which: str, folders: list[str]) -> list[Path]:
    tasks: list[Path] = []
    if which in ("all", "examples"):
        tasks += sorted((ROOT / "examples").glob("*.py"))
    if which in ("all", "kernelbench"):
        chosen = {
            line.strip()
            for line in (KERNELBENCH / "OFFLINE_SELECTION").read_text().splitlines()
            if line.strip() and not line.startswith("#")
        }
        levels = [
            sorted(
                (p for p in (KERNELBENCH / level).glob("*.py") if f"{level}/{p.name}" in chosen),
                key=lambda p: int(p.stem.split("_")[0]),
            )
            for level in ("level1", "level2")
        ]
        # Level 1 and Level 2 alternate, so a call cut short by its deadline still covers both
        tasks += [t for pair in itertools.zip_longest(*levels) for t in pair if t is not None]
    for folder in folders:
        tasks += sorted(p for p in Path(folder).glob("*.py") if not p.name.startswith("_"))
    return tasks


def shard(tasks: list[Path], spec: str | None) -> list[Path]:
    if not spec:
        return tasks
    index, _, count = spec.partition("/")
    return tasks[int(index) :: int(count)]


def read_rows(path: str | None) -> list[dict[str, Any]]:
    if not path or not Path(path).exists():
        return []
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def why_not(result: Any, cands: list[dict[str, Any]], notes: list[str]) -> str:
    """One line: why the task has no proposal (empty when it has one)."""
    if result.status == "improved":
        return ""
    if not cands:
        return "; ".join(notes) or "no candidates and no reason given"
    best = result.best
    if best is None:
        first = next((c for c in cands if c["status"] != "verified"), None)
        why = (
            (first["verdict"].get("reason") or first["status"])[:160] if first else "none verified"
        )
        return f"no candidate verified ({len(cands)} tried; {first.get('origin') if first else ''}: {why})"
    t = best.verdict.get("timings") or {}
    if not t.get("eager_ms"):
        return "verified, speed not measured (no GPU)"
    return (
        f"best ({best.origin}) {t.get('candidate_ms', 0):.4g} ms vs eager {t['eager_ms']:.4g}, torch.compile "
        f"{t.get('compile_ms') or 0:.4g}: not faster than both beyond the noise"
    )


LIBRARY_HINT = (
    '\n\nALLOWED_LIBRARY_OPS = ["aten.mm", "aten.addmm", "aten.bmm", "aten.convolution"]\n'
)


def with_library_ops(task: Path, folder: Path) -> Path:
    """A copy of the task that allows the library GEMM and convolution (`--allow-library-ops`,
    for a verifier without that default policy); the checked-in file stays as published."""
    copy = folder / f"{task_name(task)}.py"
    copy.write_text(task.read_text() + LIBRARY_HINT)
    return copy


def run_task(
    task: Path, args: argparse.Namespace, device: str, store: Any, dispatcher: Any
) -> dict[str, Any]:
    from kernelevo.optimize import optimize_task
    from kernelevo.search.loop import SearchConfig

    t0 = time.monotonic()
    if args.allow_library_ops:
        task = with_library_ops(task, Path(tempfile.mkdtemp(prefix="suite_task_")))
    cfg = SearchConfig(
        provider="offline",
        device=device,
        iterations=0,
        tune_evals=args.tune_evals,
        seed=0,
        wall_s=args.task_timeout,
    )
    try:
        result = optimize_task(task, cfg, store=store, dispatcher=dispatcher)
    except Exception as exc:  # one broken task must not hide the others
        return {
            "task": task_name(task),
            "error": f"{type(exc).__name__}: {exc}"[:300],
            "elapsed_s": round(time.monotonic() - t0, 1),
        }
    best = result.best
    cands = store.candidates(result.run_id)
    run = store.get_run(result.run_id)
    notes = list((run.summary or {}).get("notes") or []) if run else []
    t = (best.verdict.get("timings") or {}) if best else {}
    base = next(
        (
            c["verdict"].get("timings")
            for c in cands
            if (c["verdict"].get("timings") or {}).get("eager_ms")
        ),
        {},
    )
    return {
        "task": task_name(task),
        "status": result.status,
        "origin": best.origin if best else None,
        "eager_ms": t.get("eager_ms") or base.get("eager_ms"),
        "compile_ms": t.get("compile_ms") or base.get("compile_ms"),
        "best_ms": t.get("candidate_ms"),
        "speedup_eager": t.get("speedup_eager"),
        "speedup_compile": t.get("speedup_compile"),
        "evaluations": len(cands),
        "verified": sum(c["status"] == "verified" for c in cands),
        "proposed": result.status == "improved",
        "reason": why_not(result, cands, notes),
        "notes": notes,
        "oom": sum("OutOfMemory" in (c["verdict"].get("reason") or "") for c in cands),
        "not_verified": [
            {
                "origin": c.get("origin"),
                "status": c["status"],
                "reason": (c["verdict"].get("reason") or "")[:200],
            }
            for c in cands
            if c["status"] != "verified"
        ],
        "elapsed_s": round(time.monotonic() - t0, 1),
    }


def shipped_ms(row: dict[str, Any], fallback: str) -> float:
    """What the user runs: the proposed kernel, else their own code (eager) or the better baseline."""
    if row["proposed"]:
        return row["best_ms"]
    if fallback == "eager":
        return row["eager_ms"]
    return min(row["eager_ms"], row.get("compile_ms") or row["eager_ms"])


def summary(rows: list[dict[str, Any]], device: str) -> list[str]:
    f = lambda x, d=3: f"{x:.{d}f}" if isinstance(x, (int, float)) else "-"  # noqa: E731
    lines = [
        f"offline suite on {device}: {len(rows)} tasks",
        f"{'task':<44}{'eager ms':>10}{'compile':>10}{'offline':>10}{'x eager':>8}{'x comp':>7}{'evals':>6}"
        f"{'wall s':>7}  prop  origin / reason",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"{row['task'][:43]:<44} ERROR {row['error']}")
            continue
        lines.append(
            f"{row['task'][:43]:<44}{f(row['eager_ms'], 4):>10}{f(row['compile_ms'], 4):>10}"
            f"{f(row['best_ms'], 4):>10}{f(row['speedup_eager'], 2):>8}{f(row['speedup_compile'], 2):>7}"
            f"{row['evaluations']:>6}{f(row['elapsed_s'], 0):>7}  {'yes' if row['proposed'] else 'no ':<4}  "
            f"{row['origin'] or '-'} / {row['reason'][:150]}"
        )
    timed = [r for r in rows if "error" not in r and r.get("eager_ms")]
    done = [r for r in rows if "error" not in r]
    if timed:
        g_comp = geomean([r["eager_ms"] / r["compile_ms"] for r in timed if r.get("compile_ms")])
        g_eager = geomean([r["eager_ms"] / shipped_ms(r, "eager") for r in timed])
        g_better = geomean([r["eager_ms"] / shipped_ms(r, "better") for r in timed])
        slower = [
            r["task"]
            for r in timed
            if r["proposed"] and r["best_ms"] > min(r["eager_ms"], r["compile_ms"] or 1e9)
        ]
        lines.append(
            f"geomean over eager ({len(timed)} timed tasks): torch.compile {f(g_comp, 2)}x · what KernelEvo "
            f"ships, kernel where proposed else the user's code {f(g_eager, 2)}x · kernel where proposed else "
            f"the better baseline {f(g_better, 2)}x · proposals {sum(r['proposed'] for r in timed)}"
        )
        lines.append(f"proposals slower than the better baseline: {slower or 'none'}")
    lines.append(
        f"tasks with an out-of-memory candidate: {[r['task'] for r in done if r.get('oom')] or 'none'}; "
        f"without candidates and without a reason: "
        f"{[r['task'] for r in done if not r['evaluations'] and not r['notes']] or 'none'}; "
        f"errors: {[r['task'] for r in rows if 'error' in r] or 'none'}"
    )
    lines.append(
        f"wall time: {f(sum(r.get('elapsed_s') or 0 for r in rows), 0)} s in all, "
        f"{f(max((r.get('elapsed_s') or 0 for r in rows), default=0), 0)} s the slowest task"
    )
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folders", nargs="*", help="extra KernelBench-format task folders")
    ap.add_argument(
        "--set", choices=("all", "examples", "kernelbench"), default="all", dest="which"
    )
    ap.add_argument("--tune-evals", type=int, default=12)
    ap.add_argument("--only", help="comma-separated task names (as printed)")
    ap.add_argument("--shard", help="I/N: every N-th task starting at the I-th (0-based)")
    ap.add_argument(
        "--deadline", type=float, help="seconds: start no task that would likely end after this"
    )
    ap.add_argument("--task-timeout", type=float, help="wall seconds each search may spend")
    ap.add_argument(
        "--resume", help="a rows file (.jsonl) from an earlier call: its tasks are not run again"
    )
    ap.add_argument(
        "--jobs", type=int, default=1, help="searches run side by side (one shared dispatcher)"
    )
    ap.add_argument("--gpus", help="comma-separated GPU indexes (default: all visible)")
    ap.add_argument(
        "--out", default=os.environ.get("OUT", "."), help="folder for offline_suite.jsonl/.json"
    )
    ap.add_argument(
        "--allow-library-ops",
        action="store_true",
        help="run copies of the tasks that allow the library GEMM and convolution",
    )
    ap.add_argument("--report", help="print the table and totals of a rows file (.jsonl) and exit")
    args = ap.parse_args()
    start = time.monotonic()
    if args.report:
        print("\n".join(summary(read_rows(args.report), "the rows file's device")))
        return 0

    from kernelevo.dispatch.local import LocalDispatcher
    from kernelevo.measure.machine import probe
    from kernelevo.store import Store

    device = "cuda" if probe().has_gpu else "cpu"
    tasks = shard(find_tasks(args.which, args.folders), args.shard)
    if args.only:
        keep = set(args.only.split(","))
        tasks = [t for t in tasks if task_name(t) in keep or t.stem in keep]
    rows = read_rows(args.resume)
    done = {r["task"] for r in rows}
    tasks = [t for t in tasks if task_name(t) not in done]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows_file = out / "offline_suite.jsonl"
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(tasks)} tasks to run ({len(done)} resumed)", flush=True)
    store = Store(Path(tempfile.mkdtemp(prefix="offline_suite_")) / "store.sqlite")
    # one dispatcher for the whole suite: the workers start (and warm up) once, not per task
    dispatcher = LocalDispatcher(
        device, store=store, gpus=[int(g) for g in args.gpus.split(",")] if args.gpus else None
    )
    dispatcher.warm()
    slowest, skipped, lock = 0.0, [], threading.Lock()
    pending = list(tasks)

    def worker() -> None:
        """Takes tasks until none is left or the deadline is near; rows are written as they finish."""
        nonlocal slowest
        while True:
            with lock:
                if not pending:
                    return
                task = pending.pop(0)
                left = args.deadline - (time.monotonic() - start) if args.deadline else math.inf
                if left < max(slowest, 5.0):
                    skipped.append(task_name(task))
                    continue
            row = run_task(task, args, device, store, dispatcher)
            with lock:
                slowest = max(slowest, row.get("elapsed_s") or 0.0)
                rows.append(row)
                with rows_file.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
            print(
                f"done {row['task']} in {row.get('elapsed_s')} s: {row.get('status') or row.get('error')} "
                f"{row.get('reason', '')[:200]}",
                flush=True,
            )

    # searches side by side: their proposing and compiling overlap, the GPU worker times one candidate at a time
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, args.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dispatcher.close()
    order = {task_name(t): i for i, t in enumerate(find_tasks(args.which, args.folders))}
    rows.sort(key=lambda r: order.get(r["task"], len(order)))
    if skipped:
        print(f"not started (deadline): {len(skipped)} tasks: {', '.join(skipped)}")
    lines = summary(rows, device if device == "cpu" else f"{device} ({probe().gpus[0]})")
    print("\n".join(lines))
    (out / "offline_suite.json").write_text(
        json.dumps({"device": device, "rows": rows, "not_started": skipped}, indent=2)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
