"""The memory plan on every KernelBench v0.1 task of levels 1 and 2: peak GPU memory per task.

Each task's reference goes through the judge's verification and timing path with the
reference itself standing in for the candidate: probe (memory estimate on meta tensors,
task faults), begin (weights shared), five input sets and the same-buffers rerun and the
extra shapes (inputs drawn, shared, compared and dropped one set at a time), timing sets,
the candidate's own timing, the eager baseline (torch.compile with --compile), the bound,
the back-to-back output check, end. The judge's code runs in this process
(kernelevo.judge.process.Judge, the handlers the judge process serves); the candidate
process's side is this process running a second copy of the model on the judge's shared
copies of the inputs and copying its outputs into the judge's output buffers, as it does
through CUDA IPC, so the peak counts both sides' tensors (not a second CUDA context).

Peak = torch.cuda.max_memory_reserved over the task (what the caching allocator held);
`eager` is the peak of get_inputs() plus one forward alone, the memory a user needs anyway.
Prints one line per task as it goes and rewrites OUT/memory.md after each task, so a call
cut short still reports every task it finished; --resume skips tasks already in the jsonl.

Peak host memory in the exchange folder (/dev/shm) is reported too: with --via file, the way
tensors cross where CUDA IPC cannot enter the candidate's sandbox (seen on the H200).

Usage: python bench/judge_memory.py [--tasks SUBSTR,...] [--out DIR] [--budget-s 480] [--compile N]
       [--via ipc|file]
       python bench/judge_memory.py --device cpu --folder examples   (the script itself, on a CPU)
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference_verify import eager_peak, no_cuda_ipc_handles, verify_reference  # noqa: E402

KERNELBENCH = ROOT / "bench" / "kernelbench"
GiB = float(1 << 30)


class Stop(Exception):
    """The task ran past its own time limit."""


def find_tasks(folders: list[str], only: list[str]) -> list[Path]:
    if folders:
        tasks = [p for f in folders for p in sorted(Path(f).glob("*.py")) if p.name[0] != "_"]
    else:
        levels = [
            sorted((KERNELBENCH / lv).glob("*.py"), key=lambda p: int(p.stem.split("_")[0]))
            for lv in ("level1", "level2")
        ]
        tasks = [t for pair in itertools.zip_longest(*levels) for t in pair if t is not None]
    if not only:
        return tasks
    rank = {t: min((i for i, o in enumerate(only) if o in name(t)), default=-1) for t in tasks}
    return sorted((t for t in tasks if rank[t] >= 0), key=lambda t: rank[t])  # in the order asked


def name(path: Path) -> str:
    level = path.parent.name
    return f"L{level.removeprefix('level')}_{path.stem}" if level.startswith("level") else path.stem


def measure(path: Path, args: argparse.Namespace, compile_mode: str | None) -> dict[str, Any]:
    import torch

    row: dict[str, Any] = {"task": name(path), "compile_mode": compile_mode}
    cuda = args.device == "cuda"

    def _alarm(*_: object) -> None:
        raise Stop(f"over the task's {args.task_s:.0f} s limit")

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(int(args.task_s))
    t0 = time.perf_counter()
    try:
        row["eager_gib"] = eager_peak(path, args.device, args.size)
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        with no_cuda_ipc_handles():
            row.update(
                verify_reference(
                    path, args.device, args.seed, args.time_s, compile_mode, args.size, args.via
                )
            )
        row["status"] = "passed"
    except torch.cuda.OutOfMemoryError as exc:
        row.update(status="oom", reason=str(exc).splitlines()[0][:300])
    except Stop as exc:
        row.update(status="timeout", reason=str(exc))
    except Exception as exc:  # the task's own code wraps what it raised, the alarm too
        text = str(exc)
        status = "oom" if "out of memory" in text.lower() else "error"
        status = "timeout" if "raised Stop" in text else status
        row.update(status=status, reason=f"{type(exc).__name__}: {text}"[:300])
    finally:
        signal.alarm(0)
    row.setdefault("seconds", round(time.perf_counter() - t0, 2))
    if cuda:
        row["peak_gib"] = round(torch.cuda.max_memory_reserved() / GiB, 2)
        row["peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / GiB, 2)
        gc.collect()
        torch.cuda.empty_cache()
    return row


def table(rows: list[dict[str, Any]], total: float | None) -> str:
    lines = [
        "| task | compile | status | sets | input GiB | eager GiB | estimate GiB | peak GiB | s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r.get('compile_mode') or '-'} | {r['status']} | {r.get('sets', '')} | "
            f"{r.get('input_gib', '')} | {r.get('eager_gib', '')} | {r.get('need_gib', '')} | "
            f"{r.get('peak_gib', '')} | {r.get('seconds', '')} |"
        )
    done = [r for r in rows if not r.get("compile_mode")]
    peaks = sorted(r["peak_gib"] for r in done if r.get("peak_gib") is not None)
    by_status: dict[str, int] = {}
    for r in done:
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1
    summary = f"{len(done)} tasks: " + ", ".join(f"{k} {v}" for k, v in sorted(by_status.items()))
    if peaks:
        summary += f"; peak GiB median {peaks[len(peaks) // 2]}, max {peaks[-1]}" + (
            f" of {total:.0f} GiB" if total else ""
        )
    return "\n".join(lines) + "\n\n" + summary + "\n"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", default="", help="comma-separated substrings of task names")
    p.add_argument("--folder", action="append", default=[], help="tasks from here, not KernelBench")
    p.add_argument("--device", default="cuda")
    p.add_argument(
        "--size", default="default", help="default, or small (the tasks' SMALL overrides)"
    )
    p.add_argument(
        "--via", choices=["ipc", "file"], default="ipc", help="how tensors cross (file: /dev/shm)"
    )
    p.add_argument("--out", default=os.environ.get("OUT") or "/tmp/kernelevo-memplan")
    p.add_argument("--budget-s", type=float, default=480.0, help="no new task after this")
    p.add_argument("--task-s", type=float, default=60.0, help="one task's time limit")
    p.add_argument("--time-s", type=float, default=0.2, help="measuring time per timed function")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--compile", type=int, default=0, help="then torch.compile on the N largest")
    p.add_argument("--resume", action="store_true", help="skip tasks already in memory.jsonl")
    args = p.parse_args()
    import torch

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "memory.jsonl"
    rows = (
        [json.loads(x) for x in jsonl.read_text().splitlines()]
        if args.resume and jsonl.exists()
        else []
    )
    if not args.resume:
        jsonl.write_text("")
    seen = {(r["task"], r.get("compile_mode")) for r in rows}
    total = (
        torch.cuda.get_device_properties(0).total_memory / GiB if args.device == "cuda" else None
    )
    tasks = find_tasks(args.folder, [t for t in args.tasks.split(",") if t])
    start = time.perf_counter()
    plan = [(t, None) for t in tasks]
    for i in itertools.count():
        if i >= len(plan):
            if args.compile and not any(m for _, m in plan):  # phase 2: compile on the largest
                big = sorted(
                    (r for r in rows if r["status"] == "passed" and not r.get("compile_mode")),
                    key=lambda r: -(r.get("peak_gib") or 0),
                )[: args.compile]
                by_name = {name(t): t for t in tasks}
                plan += [(by_name[r["task"]], "default") for r in big if r["task"] in by_name]
            if i >= len(plan):
                break
        path, mode = plan[i]
        if (name(path), mode) in seen:
            continue
        if time.perf_counter() - start > args.budget_s:
            left = [name(t) for t, m in plan[i:] if (name(t), m) not in seen]
            print(f"budget spent: {len(left)} not run: {','.join(left)}", flush=True)
            break
        row = measure(path, args, mode)
        rows.append(row)
        with jsonl.open("a") as f:
            f.write(json.dumps(row) + "\n")
        (out / "memory.md").write_text(table(rows, total))
        print(
            f"{row['task'][:48]:48} {mode or '-'!s:8} {row['status']:8} peak {row.get('peak_gib')} "
            f"eager {row.get('eager_gib')} est {row.get('need_gib')} {row['seconds']} s "
            f"{row.get('reason', '')[:160]}",
            flush=True,
        )
    print(table(rows, total).splitlines()[-1], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
