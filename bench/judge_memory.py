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

Usage: python bench/judge_memory.py [--tasks SUBSTR,...] [--out DIR] [--budget-s 480] [--compile]
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
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
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
    return [t for t in tasks if not only or any(o in name(t) for o in only)]


def name(path: Path) -> str:
    level = path.parent.name
    return f"L{level.removeprefix('level')}_{path.stem}" if level.startswith("level") else path.stem


def _ok(reply: dict[str, Any], what: str) -> dict[str, Any]:
    for key in ("task_error", "channel_error", "error"):
        if key in reply:
            raise RuntimeError(f"{what}: {key}: {reply[key]}")
    for c in reply.get("checks") or []:
        if not c["passed"]:
            raise RuntimeError(f"{what}: check {c['name']} failed: {c['message']}")
    return reply


class ReferenceAsCandidate:
    """The candidate process's side of one verification, in this process: ModelNew = the task's Model
    with the judge's randomised weights, run on the judge's shared input copies."""

    def __init__(self, judge: Any, device: str, folder: str) -> None:
        import torch

        self.judge, self.device, self.folder = judge, device, folder
        ref = judge.ref
        torch.manual_seed(0)
        self.model = ref.module.Model(*ref.init).to(device).eval()
        self.model.load_state_dict(ref.model.state_dict())

    def args(self, set_name: str, descs: list[Any]) -> list[Any]:
        from kernelevo.tensor_channel import open_values

        if self.device == "cuda":  # CUDA IPC layout: the judge's copies are what the candidate maps
            return list(self.judge.sets[set_name]["shared"])
        return open_values(descs, self.folder, 1 << 62)

    def run(self, args: list[Any]) -> Any:
        import torch

        with torch.no_grad():
            out = self.model(*args)
        if self.device == "cuda":
            torch.cuda.synchronize()
        return out

    def deliver(self, out: Any, tag: str) -> list[dict[str, Any]]:
        """Outputs described as the candidate process describes them (copied into the judge's buffers
        on a GPU, shared files on a CPU)."""
        import torch

        from kernelevo.tensor_channel import export_tensor
        from kernelevo.verify.compare import flatten_outputs

        outs = flatten_outputs(out)
        tens = [o for o in outs if isinstance(o, torch.Tensor)]
        items: list[dict[str, Any]] = []
        if self.device == "cuda":
            specs = [
                {"dtype": str(o.dtype).replace("torch.", ""), "shape": list(o.shape)} for o in tens
            ]
            _ok(self.judge.handle({"op": "out_buffers", "specs": specs}), "out_buffers")
            for buf, o in zip(self.judge.outbufs, tens, strict=True):
                buf.copy_(o)
            pending = iter(specs)
        for i, o in enumerate(outs):
            if isinstance(o, torch.Tensor) and self.device == "cuda":
                items.append({"pending": next(pending), "plain": True})
            elif isinstance(o, torch.Tensor):
                desc = export_tensor(o, self.folder, f"out-{tag}-{i}")
                items.append({"tensor": desc, "plain": True})
            else:
                items.append({"value": o})
        return items


def verify_reference(
    path: Path, device: str, seed: int, max_time_s: float, compile_mode: str | None, size: str
) -> dict[str, Any]:
    """One task through verification and timing; returns what it measured (raises on a failure)."""
    import torch

    from kernelevo import timing
    from kernelevo.judge.process import Judge
    from kernelevo.judge.reference import nbytes
    from kernelevo.task import read_task

    task = read_task(path)
    folder = tempfile.mkdtemp(
        prefix="kernelevo-memplan-", dir="/dev/shm" if device == "cpu" else None
    )
    j = Judge()
    common = {"task_path": str(path), "task_hash": task.hash, "size": size, "device": device}
    row: dict[str, Any] = {}
    t0 = time.perf_counter()
    try:
        row["need_gib"] = _ok(j.handle({"op": "probe", **common, "seed": seed}), "probe")[
            "need_gib"
        ]
        row["probe_s"] = round(time.perf_counter() - t0, 2)
        begin = _ok(
            j.handle({"op": "begin", **common, "seed": seed, "exchange": folder, "via": "ipc"}),
            "begin",
        )
        cand = ReferenceAsCandidate(j, device, folder)

        def one_set(set_name: str, s: int, cand_first: bool, rerun: int | None, extra=None) -> None:
            inp = _ok(
                j.handle({"op": "inputs", "set": set_name, "seed": s, "extra": extra}), "inputs"
            )
            args = cand.args(set_name, inp["args"])
            for again in [False, True] if rerun is not None else [False]:
                if again:
                    _ok(j.handle({"op": "refill", "set": set_name, "seed": rerun}), "refill")
                if cand_first and not again:
                    out = cand.run(args)
                    _ok(j.handle({"op": "reference", "set": set_name}), "reference")
                else:
                    _ok(j.handle({"op": "reference", "set": set_name}), "reference")
                    out = cand.run(args)
                items = cand.deliver(out, set_name)
                del out
                req = {"op": "compare", "set": set_name, "outputs": items, "label": set_name}
                _ok(j.handle(req), f"compare {set_name}")
            del args
            _ok(j.handle({"op": "drop", "set": set_name}), "drop")

        seeds = [seed + 7919 * i for i in range(5)]
        for i, s in enumerate(seeds):
            one_set(f"s{i}", s, i % 2 == 0, s + 1 if i == 0 else None)
        for x in range(int(begin.get("n_extra") or 0)):
            one_set(f"x{x}", seeds[0] + x, True, None, extra=x)
        row["sets"] = 5 + int(begin.get("n_extra") or 0)
        row["checks_s"] = round(time.perf_counter() - t0, 2)
        _ok(j.handle({"op": "timing_sets", "seed": seed}), "timing_sets")
        sets = j.timing_shared if device == "cuda" else j.timing_sets
        own = timing.time_interleaved(
            {"candidate": lambda i: cand.model(*sets[i])},
            n_input_sets=len(sets),
            input_set_bytes=nbytes(sets[0]),
            device=torch.device(device),
            max_time_s=max_time_s,
        )["candidate"]
        key = f"{task.hash}|memplan|{compile_mode}"
        req = {
            "op": "baselines",
            "key": key,
            "compile_mode": compile_mode,
            "max_time_s": max_time_s,
        }
        base = _ok(j.handle(req), "baselines")
        _ok(j.handle({"op": "bound", "key": key, "candidate_ms": own.median_ms}), "bound")
        items = cand.deliver(cand.run(sets[0]), "timed")
        _ok(j.handle({"op": "check_timed_output", "outputs": items, "label": "timed"}), "timed")
        row.update(
            timing_sets=len(sets),
            candidate_ms=round(own.median_ms, 4),
            eager_ms=round(base["eager"]["median_ms"], 4),
            compile_ms=round(base["compile"]["median_ms"], 4) if base.get("compile") else None,
            compile_error=base.get("compile_error"),
            input_gib=round(nbytes(sets[0]) / GiB, 3),
        )
        sets = items = []
    finally:
        j.handle({"op": "end"})
        j.baselines.clear()
        j.refs.clear()
        j.timing_shared = []
        cand = None
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
            torch._dynamo.reset()
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    row["seconds"] = round(time.perf_counter() - t0, 2)
    return row


def eager_peak(path: Path, device: str, size: str) -> float | None:
    """GiB held by get_inputs() and one forward alone (on a GPU): what running the task needs anyway."""
    import torch

    from kernelevo.task import load_task_module

    if device != "cuda":
        return None
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    mod = load_task_module(str(path), size)
    with torch.device(device):
        init = list(mod.get_init_inputs())
        torch.manual_seed(0)
        inputs = list(mod.get_inputs())
        model = mod.Model(*init).eval()
        with torch.no_grad():
            out = model(*inputs)
    torch.cuda.synchronize()
    del out, inputs, model
    peak = torch.cuda.max_memory_allocated() - base
    gc.collect()
    torch.cuda.empty_cache()
    return round(peak / GiB, 2)


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
        row.update(
            verify_reference(path, args.device, args.seed, args.time_s, compile_mode, args.size)
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
