"""From candidate source to full verdict: how long, per backend, cold and cached; and how many per GPU-minute.

A full verdict is compile + verify (at least 5 random input sets, both run orders, new
values in the same buffers, extra shapes) + timing against eager and torch.compile.
All candidates go through one Evaluator whose workers are already warm (as in a search):
a warm-up verdict first pays for the worker start, the torch.compile baseline and the
device peaks, and is not counted.

- cold: every candidate is a fresh variant (a random nonce in a comment inside each
  Triton kernel and each CUDA source string, so no content hash matches), with
  TRITON_CACHE_DIR, KERNELEVO_CACHE and TORCH_EXTENSIONS_DIR pointing at fresh folders.
  The cold Triton and CUDA fast-path variants form one queue (alternating), which also
  gives the throughput.
- cached: a variant verified again, so every compile cache hits.
- load_inline: one cold build and one cached, in the same run, for the ratio.

Goals: Triton and fast-path CUDA p50 <= 2 s cold; a cold load_inline build >= 20x slower
than either; the queue's rate in candidates per GPU-minute is reported.
Each verdict is split into verify (compile + checks) and timing (inputs + timing loop).

Without a GPU: verification only (Triton interpreter, small shapes; CUDA compiled with
nvcc, not run) -- the output says so and the goals are not judged.

Usage: python bench/eval_latency.py [--quick] [--queue 16] [--no-inline] [--out FILE]
Expected: about 3 minutes on an H200 (one cold load_inline build is ~1 minute of it);
--quick --no-inline on a CPU about 1 minute.
"""

from __future__ import annotations

import argparse
import ast
import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import environment, goal, p50, table, write_json  # noqa: E402

TASK = ROOT / "examples" / "softmax.py"
SOURCES = {
    "triton": ROOT / "tests" / "candidates" / "softmax" / "triton_ok.py",
    "cuda": ROOT / "tests" / "candidates" / "softmax" / "cuda_fast.py",
    "inline": ROOT / "tests" / "candidates" / "softmax" / "inline.py",
}
GOAL_COLD_S = 2.0
GOAL_INLINE_RATIO = 20.0


def nonce_variant(source: str, nonce: str) -> str:
    """The same candidate with `nonce` in a comment inside every Triton kernel body and CUDA source string.

    Triton hashes each kernel's own source text (comments included) and nvcc/load_inline
    caches hash the CUDA strings, so a nonce there makes every compile cache miss.
    """
    tree = ast.parse(source)
    lines = source.splitlines()
    inserts: list[tuple[int, str]] = [(0, f"# nonce {nonce}")]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
            "jit" in ast.unparse(d) for d in node.decorator_list
        ):
            first = node.body[0]
            inserts.append((first.lineno - 1, " " * first.col_offset + f"# nonce {nonce}"))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "__global__" in node.value
            and node.end_lineno
            and node.end_lineno > node.lineno
        ):
            inserts.append((node.lineno, f"// nonce {nonce}"))
    for index, text in sorted(inserts, reverse=True):
        lines.insert(index, text)
    return "\n".join(lines) + "\n"


def write_variant(folder: Path, backend: str) -> Path:
    """A fresh nonce variant of the backend's softmax candidate, as a file in `folder`."""
    nonce = secrets.token_hex(8)
    path = folder / f"{backend}_{nonce}.py"
    path.write_text(nonce_variant(SOURCES[backend].read_text(), nonce))
    return path


class Run:
    """One Evaluator, verdicts split into verify and timing."""

    def __init__(self, device: str, workdir: Path) -> None:
        from kernelevo.evaluate import Evaluator

        self.device, self.workdir = device, workdir
        self.ev = Evaluator(device)
        self.rows: list[dict[str, Any]] = []

    def variant(self, backend: str) -> Path:
        return write_variant(self.workdir, backend)

    def verdict(
        self, backend: str, path: Path, kind: str, timeout: float | None = None
    ) -> dict[str, Any]:
        from kernelevo.verify import verify_candidate

        t0 = time.perf_counter()
        v = verify_candidate(
            TASK,
            path,
            evaluator=self.ev,
            device=self.device,
            timeout=timeout,
            measure=self.device == "cuda",
            use_cache=False,
        )
        timing_s = loop_s = None
        if v.timings:  # the judge times in the same verification: verify = everything before timing
            timing_s = float(v.timings.get("measure_s") or 0.0)
            loop_s = (v.timings.get("phases") or {}).get("candidate_timing_s")
        t1 = t0 + (time.perf_counter() - t0) - (timing_s or 0.0)
        row = {
            "backend": backend,
            "kind": kind,
            "status": v.status,
            "total_s": time.perf_counter() - t0,
            "verify_s": t1 - t0,
            "timing_s": timing_s,
            "timing_loop_s": loop_s,
            "reason": v.reason[:200],
            "file": path.name,
        }
        self.rows.append(row)
        print(
            f"  {kind:7s} {backend:7s} {v.status:13s} total {row['total_s']:6.2f} s  verify {row['verify_s']:6.2f} s"
            + (f"  timing {timing_s:5.2f} s" if timing_s is not None else "")
            + f"  {v.reason[:70]}",
            flush=True,
        )
        return row

    def close(self) -> None:
        self.ev.close()


def fresh_caches(root: Path) -> dict[str, str]:
    env = {
        "TRITON_CACHE_DIR": str(root / "triton"),
        "KERNELEVO_CACHE": str(root / "kernelevo"),
        "TORCH_EXTENSIONS_DIR": str(root / "torch_extensions"),
    }
    for value in env.values():
        Path(value).mkdir(parents=True)
    os.environ.update(env)  # the workers inherit them when they start
    return env


def run(args: argparse.Namespace) -> dict[str, Any]:
    from kernelevo.verify import default_device

    device = args.device or default_device()
    root = Path(tempfile.mkdtemp(prefix="kernelevo-latency-"))
    caches = fresh_caches(root)
    work = root / "candidates"
    work.mkdir()
    n_queue = args.queue if args.queue else (4 if args.quick else 16)
    n_cached = 1 if args.quick else 2
    print(
        f"eval latency on {device}: task {TASK.name}, queue of {n_queue} cold candidates, fresh caches in {root}"
        + (
            ""
            if device == "cuda"
            else "\n  NO GPU: verification only (Triton interpreter, small shapes; CUDA "
            "compiled, not run); no timing, goals not judged"
        ),
        flush=True,
    )
    r = Run(device, work)
    try:
        print(
            "warm-up (not counted): worker start, torch.compile baseline, device peaks", flush=True
        )
        for backend in ("triton", "cuda"):
            r.verdict(backend, SOURCES[backend], "warm-up")
        queue = [r.variant("triton" if i % 2 == 0 else "cuda") for i in range(n_queue)]
        print(f"cold queue of {n_queue}:", flush=True)
        t0 = time.perf_counter()
        for path in queue:
            r.verdict(path.name.split("_")[0], path, "cold")
        queue_s = time.perf_counter() - t0
        print("cached (same files again):", flush=True)
        for backend in ("triton", "cuda"):
            for path in [p for p in queue if p.name.startswith(backend)][:n_cached]:
                r.verdict(backend, path, "cached")
        if not args.no_inline:
            print("load_inline (cold build, then cached):", flush=True)
            path = r.variant("inline")
            r.verdict("inline", path, "cold", timeout=600.0)
            r.verdict("inline", path, "cached", timeout=600.0)
    finally:
        r.close()
    try:
        pipelined = pipelined_queue(device, work, n_queue)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    data = summarize(r.rows, device, queue_s, n_queue, caches, args)
    data["pipelined"] = pipelined
    print(
        f"pipelined queue (dispatcher, compile ahead): {pipelined['n']} cold candidates in {pipelined['seconds']:.1f} s"
        f" = {pipelined['per_minute']:.1f} per {'GPU-' if device == 'cuda' else 'CPU-'}minute, statuses "
        f"{pipelined['statuses']}",
        flush=True,
    )
    return data


def pipelined_queue(device: str, work: Path, n: int) -> dict[str, Any]:
    """The same kind of queue through the dispatcher, with more candidates in flight than GPUs, so
    each candidate compiles in the compile pool while the GPU runs the one before (as a search does)."""
    from concurrent.futures import ThreadPoolExecutor

    from kernelevo.dispatch.local import LocalDispatcher

    print(
        f"pipelined queue of {n} through the dispatcher (warm-up first, not counted):", flush=True
    )
    with LocalDispatcher(device) as d:
        d.warm()
        for backend in ("triton", "cuda"):
            d.evaluate(TASK, SOURCES[backend])
        paths = [write_variant(work, "triton" if i % 2 == 0 else "cuda") for i in range(n)]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(d.capacity + 2) as pool:
            verdicts = list(pool.map(lambda p: d.evaluate(TASK, p), paths))
        seconds = time.perf_counter() - t0
    ahead = [
        next((c.detail.get("seconds") for c in v.checks if c.name == "compiled_ahead"), None)
        for v in verdicts
    ]
    return {
        "n": n,
        "seconds": seconds,
        "per_minute": n / seconds * 60,
        "gpus": d.capacity,
        "statuses": sorted({v.status for v in verdicts}),
        "compile_ahead_s": ahead,
    }


def summarize(
    rows: list[dict[str, Any]],
    device: str,
    queue_s: float,
    n_queue: int,
    caches: dict[str, str],
    args: argparse.Namespace,
) -> dict[str, Any]:
    stats = {}
    for backend in ("triton", "cuda", "inline"):
        for kind in ("cold", "cached"):
            sel = [x for x in rows if x["backend"] == backend and x["kind"] == kind]
            if not sel:
                continue
            timing = [x["timing_s"] for x in sel if x["timing_s"] is not None]
            stats[f"{backend} {kind}"] = {
                "n": len(sel),
                "p50_s": p50([x["total_s"] for x in sel]),
                "max_s": max(x["total_s"] for x in sel),
                "verify_p50_s": p50([x["verify_s"] for x in sel]),
                "timing_p50_s": p50(timing),
                "timing_loop_p50_s": p50(
                    [x["timing_loop_s"] for x in sel if x["timing_loop_s"] is not None]
                ),
                "statuses": sorted({x["status"] for x in sel}),
            }
    print()
    print(
        table(
            [
                "backend",
                "n",
                "p50 s",
                "max s",
                "verify p50 s",
                "timing p50 s",
                "of it: loop s",
                "statuses",
            ],
            [
                [
                    k,
                    s["n"],
                    s["p50_s"],
                    s["max_s"],
                    s["verify_p50_s"],
                    s["timing_p50_s"],
                    s["timing_loop_p50_s"],
                    ",".join(s["statuses"]),
                ]
                for k, s in stats.items()
            ],
        )
    )
    for backend in ("triton", "cuda", "inline"):
        cold, cached = stats.get(f"{backend} cold"), stats.get(f"{backend} cached")
        if cold and cached:
            print(
                f"{backend}: compile share of a cold verdict ~ {cold['verify_p50_s'] - cached['verify_p50_s']:.2f} s "
                f"(cold verify p50 - cached verify p50)"
            )
    rate = n_queue / queue_s * 60 if queue_s > 0 else None
    print(
        f"queue: {n_queue} cold candidates in {queue_s:.1f} s = {rate:.1f} candidates per "
        f"{'GPU-' if device == 'cuda' else 'CPU-'}minute",
        flush=True,
    )
    judged = device == "cuda"
    goals = []
    for backend in ("triton", "cuda"):
        s = stats.get(f"{backend} cold")
        if s:
            ok = s["p50_s"] <= GOAL_COLD_S and s["statuses"] == ["verified"]
            goals.append(
                goal(
                    f"{backend} cold p50 <= {GOAL_COLD_S:g} s",
                    ok if judged else None,
                    f"p50 {s['p50_s']:.2f} s (verify {s['verify_p50_s']:.2f} s"
                    + (
                        f" + timing {s['timing_p50_s']:.2f} s"
                        if s["timing_p50_s"] is not None
                        else ""
                    )
                    + f"), statuses {s['statuses']}",
                )
            )
    inline = stats.get("inline cold")
    fast = [stats[k]["p50_s"] for k in ("triton cold", "cuda cold") if k in stats]
    if inline and fast:
        ratio = inline["p50_s"] / max(fast)
        failed = [
            st for st in inline["statuses"] if st in ("compile_error", "runtime_error", "timeout")
        ]
        detail = f"{inline['p50_s']:.1f} s vs {max(fast):.2f} s = {ratio:.1f}x"
        if failed:
            why = next(
                x["reason"] for x in rows if x["backend"] == "inline" and x["kind"] == "cold"
            )
            detail += f"; the build did not succeed ({failed[0]}: {why[:120]}), so the ratio means nothing"
        goals.append(
            goal(
                f"cold load_inline >= {GOAL_INLINE_RATIO:g}x the fast backends",
                (ratio >= GOAL_INLINE_RATIO and not failed) if judged else None,
                detail,
            )
        )
    goals.append(
        goal(
            "throughput (informational)",
            None,
            f"{rate:.1f} candidates per minute, queue of {n_queue}",
        )
    )
    return {
        "bench": "eval_latency",
        "device": device,
        "env": environment(),
        "task": str(TASK),
        "rows": rows,
        "stats": stats,
        "queue": {"n": n_queue, "seconds": queue_s, "per_minute": rate},
        "fresh_cache_vars": list(caches),
        "timed": device == "cuda",
        "goals": goals,
        "args": {k: v for k, v in vars(args).items()},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--quick", action="store_true", help="a queue of 4 and one cached run per backend"
    )
    p.add_argument(
        "--queue", type=int, help="cold candidates in the queue (default 16; 4 with --quick)"
    )
    p.add_argument(
        "--no-inline", action="store_true", help="skip the load_inline build (about a minute)"
    )
    p.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when a GPU is found")
    p.add_argument("--out", help="JSON file (default: $OUT/eval_latency.json when $OUT is set)")
    p.add_argument(
        "--shell", action="store_true", help="kernelevo verify per shell (shell_latency.py)"
    )
    p.add_argument("--repeat", type=int, default=3, help="with --shell: candidates per case")
    p.add_argument(
        "--budget-s", type=float, default=0, help="with --shell: start no case past this"
    )
    p.add_argument("--goals-first", action="store_true", help="with --shell: the goal cases first")
    args = p.parse_args(argv)
    if args.shell:
        from shell_latency import run as shell_run

        from kernelevo.verify import default_device

        data = shell_run(
            args.device or default_device(),
            args.repeat,
            not args.no_inline,
            args.budget_s,
            args.goals_first,
        )
        write_json("shell_latency", data, args.out)
        return 0
    if args.queue is not None and args.queue < 2:
        p.error("--queue must be at least 2")
    data = run(args)
    write_json("eval_latency", data, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
