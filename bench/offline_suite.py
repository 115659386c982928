"""The offline search (no model) over the bundled examples and the KernelBench tasks in bench/kernelbench.

    python bench/offline_suite.py [FOLDER...] [--set all|examples|kernelbench] [--only A,B]
        [--shard I/N] [--jobs K] [--deadline S] [--resume ROWS.jsonl] [--tune-evals N] [--out DIR]

Per task: eager, torch.compile and the best offline kernel (ms), where the best came from,
whether it is proposed (the engine's ship rule: faster than eager beyond the timing noise, not
slower than torch.compile beyond it; "beats" or "matches" torch.compile) and, when not, why
(one line per source that offered nothing, or why its candidates lost), the wall time.
The KernelBench set is bench/kernelbench/OFFLINE_SELECTION, in its order (cheapest first: the
tasks' bytes at v0.1 sizes); each line's GiB figure also keeps searches whose tasks together
need more than --gib of GPU memory from running side by side.
Each finished task is appended to DIR/offline_suite.jsonl at once (and to the --resume file),
and DIR/offline_suite.md holds the table and totals so far, so a call cut short keeps what it
did; `--resume` skips the tasks a rows file already holds, `--shard` takes every N-th, and
`--deadline` starts no task once the time left is below the median task so far, and a search
it starts gets the time left as its wall budget (the parameter search stops at it too): a row
whose search that budget ended says `cut_by_deadline`.
Without a GPU it verifies only and says that speed was not measured.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
KERNELBENCH = ROOT / "bench" / "kernelbench"
MEM_BASE = 3.0  # GiB every search holds whatever its task (CUDA contexts, allocator slack)
# a search's GPU memory over its task's bytes: the judge's peak with torch.compile at most 3.8x its
# eager bytes on 12-16 GiB tasks; two 12 GiB searches side by side held 74.7 GiB (H200, 2026-12-04)
MEM_FACTOR = 4

from offline_suite_table import is_oom, markdown_table, may_start, summary_lines  # noqa: E402


def task_name(path: Path) -> str:
    """`L2_12_Gemm_Multiply_LeakyReLU` for a KernelBench task, the file's stem for an example."""
    level = path.parent.name
    return f"L{level.removeprefix('level')}_{path.stem}" if level.startswith("level") else path.stem


def selection() -> list[tuple[str, float]]:
    """(level/file, GiB the task's inputs, weights and output take at v0.1 sizes), in file order."""
    out = []
    for line in (KERNELBENCH / "OFFLINE_SELECTION").read_text().splitlines():
        parts = line.split("#")[0].split()
        if parts:
            out.append((parts[0], float(parts[1]) if len(parts) > 1 else 1.0))
    return out


def task_gib(path: Path) -> float:
    rel = f"{path.parent.name}/{path.name}"
    return next((g for name, g in selection() if name == rel), 1.0)


def find_tasks(which: str, folders: list[str]) -> list[Path]:
    tasks: list[Path] = []
    if which in ("all", "examples"):
        tasks += sorted((ROOT / "examples").glob("*.py"))
    if which in ("all", "kernelbench"):
        tasks += [KERNELBENCH / name for name, _ in selection()]
    for folder in folders:
        tasks += sorted(p for p in Path(folder).glob("*.py") if not p.name.startswith("_"))
    return tasks


def shard(tasks: list[Path], spec: str | None) -> list[Path]:
    if not spec:
        return tasks
    index, _, count = spec.partition("/")
    return tasks[int(index) :: int(count)]


def run_order(tasks: list[Path]) -> list[Path]:
    """Biggest first (file order among equals): the 12-16 GiB tasks run at most two side by side
    and take the longest, so started last they end the suite alone. On the H200 on 2026-12-04,
    in file order, 28 of the first shard's 32 tasks ran in 826 s and the 4 largest were not
    started; a replay of those walls (the 4 at 1.4x their earlier walls) ends in 826 s biggest
    first, against 1,091 s in file order."""
    return sorted(tasks, key=lambda t: -task_gib(t))


def read_rows(paths: str | None) -> list[dict[str, Any]]:
    """Rows of every comma-separated rows file that exists; a task's last row wins."""
    rows: dict[str, dict[str, Any]] = {}
    for path in (paths or "").split(","):
        if path and Path(path).exists():
            for line in Path(path).read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    rows[row["task"]] = row
    return list(rows.values())


def same_machine(rows: list[dict[str, Any]], where: str) -> tuple[list, list]:
    """Resumed rows split into those measured on this kind of device (or before rows named one)
    and those from another: a ratio from an H100 is not one from an H200, so those run again."""
    here = [r for r in rows if r.get("device", where) == where]
    return here, [r for r in rows if r.get("device", where) != where]


def why_not(result: Any, cands: list[dict[str, Any]], notes: list[str]) -> str:
    """One line: how the proposal stands against torch.compile, or why there is none."""
    outcome = result.outcome
    if result.status == "improved":
        return f"proposed: {outcome.headline()}" if outcome else "proposed"
    if not cands:
        return "; ".join(notes)  # empty: no candidate and no reason (the totals name the task)
    best = result.best
    if best is None:
        first = next((c for c in cands if c["status"] != "verified"), None)
        why = (
            textwrap.shorten(
                first["verdict"].get("reason") or first["status"], 200, placeholder=" …"
            )
            if first
            else "none verified"
        )
        return f"no candidate verified ({len(cands)} tried; {first.get('origin') if first else ''}: {why})"
    t = best.verdict.timings or {}
    if not t.get("eager_ms"):
        return "verified, speed not measured (no GPU)"
    because = "; ".join(outcome.reasons) if outcome else "not proposed"
    return (
        f"best ({best.origin}) {t.get('candidate_ms', 0):.4g} ms vs eager {t['eager_ms']:.4g}, "
        f"torch.compile {t.get('compile_ms') or 0:.4g}: {because}"
    )


def intervals(timings: dict[str, Any]) -> dict[str, list[float]]:
    """The 95 % intervals of the medians (ms) the ship rule compared."""
    detail = timings.get("detail") or {}
    return {
        name: [float(d.get("ci_low_ms") or 0), float(d.get("ci_high_ms") or 0)]
        for name in ("candidate", "eager", "compile")
        if isinstance(d := detail.get(name), dict) and d.get("ci_high_ms")
    }


LIBRARY_HINT = (
    '\n\nALLOWED_LIBRARY_OPS = ["aten.mm", "aten.addmm", "aten.bmm", "aten.convolution"]\n'
)


def with_library_ops(task: Path, folder: Path) -> Path:
    """A copy of the task that allows the library GEMM and convolution (`--allow-library-ops`,
    for a verifier without that default policy); the checked-in file stays as published."""
    copy = folder / f"{task_name(task)}.py"
    copy.write_text(task.read_text() + LIBRARY_HINT)
    return copy


EVAL_FIELDS = (
    "origin",
    "ms",
    "total_s",
    "gate_wait_s",
    "load_s",
    "checks_s",
    "timing_s",
    "compile_ahead_s",
    "slot_wait_s",
    "cleanup_s",
    "status",
    "config",
)


def evaluation_seconds(cand: dict[str, Any]) -> list[Any]:
    """One evaluation as EVAL_FIELDS: the seconds of its verdict in all, waiting for the GPU's gate
    (another slot's timing), loading the candidate, up to the end of the checks (the wait and the
    load included) and timing the candidate; before the verdict, compiling ahead and waiting for
    a free slot; after it, the clean-up; then its status (`screened` for a parameter-search
    configuration) and its launch and tile values ("BLOCK_SIZE=1024 num_warps=8 num_stages=3",
    defaults included), so one run's parameter search can be compared with another's."""
    v = cand.get("verdict") or {}
    phases = v.get("phases") or {}
    timing = (v.get("timings") or {}).get("phases") or {}
    before = phases.get("dispatch") or {}
    return [
        cand.get("origin"),
        cand.get("time_ms") and round(cand["time_ms"], 4),
        phases.get("total_s"),
        (phases.get("gpu_gate") or {}).get("waited_s"),
        phases.get("load_s"),
        phases.get("checks_s"),
        timing.get("candidate_timing_s"),
        before.get("compile_ahead_s"),
        before.get("slot_wait_s"),
        phases.get("cleanup_s"),
        cand.get("status"),
        launch_values(cand.get("source") or ""),
    ]


def launch_values(source: str) -> str:
    """A source's tunable values in order, each by its short name ("BLOCK_SIZE=1024 num_warps=8")."""
    from kernelevo.offline.tunables import find_tunables

    try:
        tunables = find_tunables(source)
    except SyntaxError:
        return ""
    return " ".join(f"{t.name.split('@')[0].split('.')[-1]}={t.value}" for t in tunables)


def run_task(
    task: Path,
    args: argparse.Namespace,
    device: str,
    store: Any,
    dispatcher: Any,
    wall_s: float | None = None,
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
        wall_s=wall_s if wall_s is not None else args.task_timeout,
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
    t = (best.verdict.timings or {}) if best else {}
    base: dict[str, Any] = next(
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
        "versus_compile": result.outcome.versus_compile if result.outcome else "",
        "ci": intervals(t),
        "reason": why_not(result, cands, notes),
        "notes": notes,
        # wall seconds of the search's phases: proposing (templates, Inductor), verifying the
        # seeds, the model loop, the parameter search
        "phase_s": dict((run.summary or {}).get("phase_s") or {}) if run else {},
        "oom": sum(is_oom(c["verdict"].get("reason") or "") for c in cands),
        # each evaluation: origin, its time (ms), and where the verdict's seconds went
        "evals": [evaluation_seconds(c) for c in cands],
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
        "--deadline",
        type=float,
        help="seconds: start no task that would likely end after this; a started search ends by it",
    )
    ap.add_argument("--task-timeout", type=float, help="wall seconds each search may spend")
    ap.add_argument(
        "--resume",
        help="rows files (.jsonl, comma-separated) from earlier calls: their tasks are not run "
        "again; the first also gets this call's rows (keep it where the next call finds it)",
    )
    ap.add_argument(
        "--jobs", type=int, default=1, help="searches run side by side (one shared dispatcher)"
    )
    ap.add_argument("--gpus", help="comma-separated GPU indexes (default: all visible)")
    ap.add_argument(
        "--slots-per-gpu",
        type=int,
        default=1,
        choices=range(1, 5),
        metavar="K",
        help="evaluation slots per GPU (1-4): the searches' check phases overlap, timings run alone",
    )
    ap.add_argument(
        "--out", default=os.environ.get("OUT", "."), help="folder for offline_suite.jsonl/.json"
    )
    ap.add_argument(
        "--allow-library-ops",
        action="store_true",
        help="run copies of the tasks that allow the library GEMM and convolution",
    )
    ap.add_argument(
        "--gib",
        type=float,
        default=110.0,
        help="GPU memory (GiB) the searches side by side may need together: a task counts "
        f"{MEM_BASE:g} GiB + --mem-factor x its OFFLINE_SELECTION figure (sets, candidate, "
        "outputs, extraction)",
    )
    ap.add_argument(
        "--mem-factor",
        type=float,
        default=MEM_FACTOR,
        help="a task's GPU memory over its OFFLINE_SELECTION figure, for --gib's count",
    )
    ap.add_argument(
        "--require-gpu",
        action="store_true",
        help="stop at once (exit 2) when no GPU is found, instead of verifying on the CPU",
    )
    ap.add_argument("--report", help="print the table and totals of a rows file (.jsonl) and exit")
    args = ap.parse_args()
    start = time.monotonic()
    if args.report:
        rows = read_rows(args.report)
        print("\n".join([*markdown_table(rows), "", *summary_lines(rows, "the rows' device")]))
        return 0

    from kernelevo.dispatch.local import LocalDispatcher
    from kernelevo.measure.machine import probe
    from kernelevo.store import Store

    machine = probe()
    device = "cuda" if machine.has_gpu else "cpu"
    if device == "cpu" and args.require_gpu:
        print(f"no GPU found ({machine.gpu_problem or 'none visible'}): nothing run", flush=True)
        return 2
    where = device if device == "cpu" else f"{device} ({probe().gpus[0]})"
    tasks = shard(find_tasks(args.which, args.folders), args.shard)
    if args.only:
        keep = set(args.only.split(","))
        tasks = [t for t in tasks if task_name(t) in keep or t.stem in keep]
    planned = [task_name(t) for t in tasks]
    rows, elsewhere = same_machine(read_rows(args.resume), where)
    if elsewhere:
        print(
            f"{len(elsewhere)} resumed rows were measured on another device; run again here: "
            + ", ".join(r["task"] for r in elsewhere),
            flush=True,
        )
    done = {r["task"] for r in rows}
    tasks = [t for t in tasks if task_name(t) not in done]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows_file = out / "offline_suite.jsonl"
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    keep_file = Path(args.resume.split(",")[0]) if args.resume else None
    if keep_file is not None:
        keep_file.parent.mkdir(parents=True, exist_ok=True)
    order = {task_name(t): i for i, t in enumerate(find_tasks(args.which, args.folders))}

    def write_table() -> None:
        ranked = sorted(rows, key=lambda r: order.get(r["task"], len(order)))
        have = {r["task"] for r in rows}
        left = [name for name in planned if name not in have]
        (out / "offline_suite.md").write_text(
            "\n".join([*markdown_table(ranked), "", *summary_lines(ranked, where)])
            + f"\nnot measured yet: {len(left)} of {len(planned)} tasks{': ' if left else ''}"
            + ", ".join(left)
            + "\n"
        )

    write_table()
    print(f"{len(tasks)} tasks to run ({len(done)} resumed)", flush=True)
    store = Store(Path(tempfile.mkdtemp(prefix="offline_suite_")) / "store.sqlite")
    # one dispatcher for the whole suite: the workers start (and warm up) once, not per task
    dispatcher = LocalDispatcher(
        device,
        store=store,
        gpus=[int(g) for g in args.gpus.split(",")] if args.gpus else None,
        slots_per_gpu=args.slots_per_gpu,
    )
    dispatcher.warm()
    print(
        f"workers ready after {time.monotonic() - start:.0f} s ({args.slots_per_gpu} slot(s) per GPU)",
        flush=True,
    )
    finished_walls: list[float] = []
    cond = threading.Condition()
    skipped: list[str] = []
    pending, in_use = run_order(tasks), [0.0]

    def take() -> tuple[Path, float] | None:
        """The first pending task whose memory fits beside the running ones (waits for one)."""
        with cond:
            while pending:
                left = args.deadline - (time.monotonic() - start) if args.deadline else math.inf
                if not may_start(left, finished_walls):
                    skipped.extend(task_name(t) for t in pending)
                    pending.clear()
                    return None
                for task in pending:
                    need = MEM_BASE + args.mem_factor * task_gib(task) if device == "cuda" else 0.0
                    if in_use[0] == 0 or in_use[0] + need <= args.gib:
                        pending.remove(task)
                        in_use[0] += need
                        return task, need
                cond.wait(timeout=5)
            return None

    def worker() -> None:
        """Takes tasks until none is left or the deadline is near; rows are written as they finish."""
        while (got := take()) is not None:
            task, need = got
            t0 = time.monotonic()
            # a search started before the deadline ends by it (its parameter search included)
            walls = [args.task_timeout, args.deadline - (t0 - start) if args.deadline else None]
            wall = min((w for w in walls if w is not None), default=None)
            try:
                row = run_task(task, args, device, store, dispatcher, wall)
            except Exception as exc:  # reading the run back failed: the row says so, the rest go on
                row = {
                    "task": task_name(task),
                    "error": f"{type(exc).__name__}: {exc}"[:300],
                    "elapsed_s": round(time.monotonic() - t0, 1),
                }
            with cond:
                in_use[0] -= need
                finished_walls.append(row.get("elapsed_s") or 0.0)
                cut = args.deadline and wall is not None and wall < (args.task_timeout or math.inf)
                row["cut_by_deadline"] = bool(cut and (row.get("elapsed_s") or 0.0) >= wall - 2.0)
                row["device"] = where
                rows.append(row)
                line = json.dumps(row) + "\n"
                for path in (rows_file, keep_file):
                    if path is not None:
                        with path.open("a") as fh:
                            fh.write(line)
                write_table()
                cond.notify_all()
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
    rows.sort(key=lambda r: order.get(r["task"], len(order)))
    if skipped:
        print(f"not started (deadline): {len(skipped)} tasks: {', '.join(skipped)}")
    print("\n".join([*markdown_table(rows), "", *summary_lines(rows, where)]))
    (out / "offline_suite.json").write_text(
        json.dumps({"device": device, "rows": rows, "not_started": skipped}, indent=2)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
