"""Faults in a batch: every good kernel still gets its verdict, and how long recovery takes.

A queue mixes good candidates with ones that poison the CUDA context (illegal
address, from the CUDA fast path and from Triton), hang (a spinning kernel, a host
loop) and crash the worker (SIGSEGV), all through one Evaluator, as a search would.
Reported: each verdict against its expectation, worker restarts, and per fault the
recovery time: from the fault's verdict to the next good verdict, and how much longer
that good verdict took than a good one after a good one (a fresh worker: torch import,
CUDA context, torch.compile baseline).

On a machine without a GPU the same queue runs on the CPU (Triton interpreter, small
shapes): the wild store segfaults there instead of poisoning a context.

Usage: python bench/faults.py [--quick] [--hang-limit S] [--no-measure] [--out FILE]
Expected: about 2-3 minutes on an H200 (two 10 s hang limits); --quick on a CPU about 35 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import environment, goal, p50, table, write_json  # noqa: E402

EXAMPLES = ROOT / "examples"
CAND = ROOT / "tests" / "candidates"
PROBE = (
    "softmax",
    CAND / "softmax" / "triton_ok.py",
)  # the good candidate run right after each fault

GPU_FAULTS = [
    (
        "illegal address (CUDA fast path)",
        "softmax",
        CAND / "hacks_gpu" / "illegal_address_cuda.py",
        "runtime_error",
    ),
    ("crash (SIGSEGV)", "softmax", CAND / "hacks_gpu" / "segfaults_at_runtime.py", "runtime_error"),
    ("hang (kernel spins)", "softmax", CAND / "hacks_gpu" / "hangs_in_kernel.py", "timeout"),
    ("illegal address (Triton)", "softmax", CAND / "hacks" / "wild_store.py", "runtime_error"),
    ("hang (host loop)", "softmax", CAND / "hacks" / "hangs.py", "timeout"),
]
CPU_FAULTS = [
    ("wild store (segfault)", "softmax", CAND / "hacks" / "wild_store.py", "runtime_error"),
    ("crash (SIGSEGV)", "softmax", CAND / "hacks_gpu" / "segfaults_at_runtime.py", "runtime_error"),
    ("hang (kernel spins)", "softmax", CAND / "hacks_gpu" / "hangs_in_kernel.py", "timeout"),
    ("hang (host loop)", "softmax", CAND / "hacks" / "hangs.py", "timeout"),
]
GPU_OTHERS = [
    ("softmax", CAND / "softmax" / "cuda_fast.py"),
    ("rms_norm", CAND / "rms_norm" / "triton_ok.py"),
]
CPU_OTHERS = [
    ("rms_norm", CAND / "rms_norm" / "triton_ok.py"),
    ("layer_norm", CAND / "layer_norm" / "triton_ok.py"),
]


def build_queue(faults: list[tuple], others: list[tuple]) -> list[dict]:
    """probe, probe, then per fault: fault, probe (recovery), another good one; a probe at the end."""

    def good(task: str, path: Path, role: str) -> dict:
        return {
            "label": f"{task}/{path.stem}",
            "task": task,
            "path": path,
            "expect": "verified",
            "role": role,
        }

    queue = [good(*PROBE, "warm-up"), good(*PROBE, "baseline")]
    for i, (label, task, path, expect) in enumerate(faults):
        queue.append(
            {"label": label, "task": task, "path": path, "expect": expect, "role": "fault"}
        )
        queue.append(good(*PROBE, "recovery"))
        task2, path2 = others[i % len(others)]
        queue.append(good(task2, path2, "good"))
    queue.append(good(*PROBE, "baseline"))
    return queue


def run(args: argparse.Namespace) -> dict:
    from kernelevo.evaluate import Evaluator
    from kernelevo.verify import default_device, verify_candidate

    device = args.device or default_device()
    faults, others = (GPU_FAULTS, GPU_OTHERS) if device == "cuda" else (CPU_FAULTS, CPU_OTHERS)
    if args.quick:
        faults, others = faults[:3], others[:1]
    queue = build_queue(faults, others)
    hang_limit = args.hang_limit
    print(
        f"faults: {len(queue)} candidates ({len(faults)} faults) on {device}; hang limit {hang_limit:g} s; "
        f"timing {'off' if args.no_measure or device != 'cuda' else 'on'}",
        flush=True,
    )
    results = []
    t_start = time.perf_counter()
    with Evaluator(device) as ev:
        for item in queue:
            pid_before = ev.runner.proc.pid if ev.runner.alive else None
            t0 = time.perf_counter()
            timeout = hang_limit if item["expect"] == "timeout" else None
            v = verify_candidate(
                EXAMPLES / f"{item['task']}.py",
                item["path"],
                evaluator=ev,
                device=device,
                timeout=timeout,
                measure=not args.no_measure,
            )
            t1 = time.perf_counter()
            pid_after = ev.runner.proc.pid if ev.runner.alive else None
            row = {
                "label": item["label"],
                "role": item["role"],
                "expect": item["expect"],
                "status": v.status,
                "ok": v.status == item["expect"],
                "elapsed_s": t1 - t0,
                "done_at_s": t1 - t_start,
                "reason": v.reason[:300],
                "pid_before": pid_before,
                "pid_after": pid_after,
                "runner_restarts": ev.runner.restarts,
                "candidate_ms": (v.timings or {}).get("candidate_ms"),
            }
            results.append(row)
            print(
                f"  {row['done_at_s']:7.1f}s  {item['role']:9s} {item['label']:34s} {v.status:14s} "
                f"{'ok ' if row['ok'] else 'BAD'} {row['elapsed_s']:6.2f}s  {v.reason[:80]}",
                flush=True,
            )
    total = time.perf_counter() - t_start
    return summarize(results, total, device, hang_limit, len(queue))


def summarize(
    results: list[dict], total_s: float, device: str, hang_limit: float, n_queued: int
) -> dict:
    baseline = [r["elapsed_s"] for r in results if r["role"] == "baseline" and r["ok"]]
    base = p50(baseline)
    recoveries = []
    for i, r in enumerate(results):
        if r["role"] != "fault":
            continue
        nxt = next((x for x in results[i + 1 :] if x["expect"] == "verified"), None)
        rec = {
            "fault": r["label"],
            "status": r["status"],
            "expected": r["expect"],
            "fault_s": r["elapsed_s"],
            "recovery_s": nxt["elapsed_s"] if nxt else None,
            "overhead_s": (nxt["elapsed_s"] - base) if nxt and base is not None else None,
            "next_good_verified": bool(nxt and nxt["ok"]),
            "worker_replaced": bool(
                nxt and r["pid_before"] is not None and nxt["pid_after"] != r["pid_before"]
            ),
        }
        recoveries.append(rec)
    goods = [r for r in results if r["expect"] == "verified"]
    print()
    print(
        table(
            ["fault", "verdict", "expected", "fault s", "recovery s", "overhead s", "new worker"],
            [
                [
                    x["fault"],
                    x["status"],
                    x["expected"],
                    x["fault_s"],
                    x["recovery_s"],
                    x["overhead_s"],
                    "yes" if x["worker_replaced"] else "no",
                ]
                for x in recoveries
            ],
        )
    )
    print(
        f"\ngood-after-good verdict p50: {base if base is None else round(base, 2)} s; total {total_s:.1f} s for "
        f"{len(results)} candidates"
    )
    goals = [
        goal(
            "every good kernel verified",
            all(r["ok"] for r in goods),
            f"{sum(r['ok'] for r in goods)}/{len(goods)} good candidates verified",
        ),
        goal(
            "every fault gets its verdict",
            all(r["ok"] for r in results if r["role"] == "fault"),
            ", ".join(f"{x['fault']}: {x['status']}" for x in recoveries),
        ),
        goal(
            "none lost",
            len(results) == n_queued and all(r["status"] for r in results),
            f"{len(results)} verdicts for {n_queued} queued candidates",
        ),
    ]
    over = [x["overhead_s"] for x in recoveries if x["overhead_s"] is not None]
    goals.append(
        goal(
            "recovery overhead per fault (informational)",
            None,
            f"p50 {p50(over) or 0:.2f} s, max {max(over) if over else 0:.2f} s over a good-after-good "
            f"verdict; hang limit {hang_limit:g} s not included",
        )
    )
    return {
        "bench": "faults",
        "device": device,
        "env": environment(),
        "total_s": total_s,
        "results": results,
        "recoveries": recoveries,
        "baseline_good_s": base,
        "goals": goals,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="fewer faults and good kernels")
    p.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when a GPU is found")
    p.add_argument(
        "--hang-limit", type=float, default=10.0, help="time limit for the hanging candidates (s)"
    )
    p.add_argument(
        "--no-measure", action="store_true", help="verify only, do not time verified candidates"
    )
    p.add_argument("--out", help="JSON file (default: $OUT/faults.json when $OUT is set)")
    args = p.parse_args(argv)
    data = run(args)
    write_json("faults", data, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
