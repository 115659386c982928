"""Evaluation throughput against the number of GPUs: does one dispatcher scale linearly?

For n = 1..N GPUs, a queue of --per-gpu x n correct candidates (the examples' triton_ok.py,
each with a fresh nonce comment, so no verdict is cached) goes through the local
dispatcher with n + 2 evaluations in flight, as a search does (two compile ahead). Every candidate gets the full
verdict (compile, verification, timing against eager and torch.compile). Throughput is
candidates per minute; the ratio to linear is throughput(n) / (n x throughput(1)).

All N workers are started and warmed once (worker start, torch.compile baselines, Triton
compiles: not counted), then the n-GPU runs use the first n of them.

Goal: ratio to linear >= 0.9 for every n up to the GPUs present.
Without a GPU, CPU workers stand in for GPUs (--gpus means workers; the Triton
interpreter on small shapes): the goal is not judged there (CPU cores are shared).

Usage: python bench/scale.py [--gpus N] [--per-gpu 16] [--tasks softmax,rms_norm] [--out FILE]
Expected: about 4 minutes on 2 H200s with the defaults.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import environment, goal, table, write_json  # noqa: E402

GOAL_RATIO = 0.9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--gpus",
        type=int,
        help="largest number of GPUs (default: all visible; CPU workers without a GPU: 2)",
    )
    ap.add_argument(
        "--per-gpu", type=int, default=16, help="candidates in the queue per GPU (default 16)"
    )
    ap.add_argument(
        "--tasks",
        default="softmax,rms_norm",
        help="examples whose triton_ok.py candidates fill the queue",
    )
    ap.add_argument("--device", choices=["cpu", "cuda"])
    ap.add_argument("--out", help="JSON report (default $OUT/scale.json when $OUT is set)")
    args = ap.parse_args()

    from kernelevo.dispatch.local import LocalDispatcher, visible_gpus
    from kernelevo.dispatch.slots import SlotPool
    from kernelevo.task import read_task
    from kernelevo.verify import default_device, verify_candidate

    device = args.device or default_device()
    n_max = args.gpus or (len(visible_gpus()) if device == "cuda" else 2)
    names = [n.strip() for n in args.tasks.split(",") if n.strip()]
    tasks = [read_task(ROOT / "examples" / f"{n}.py") for n in names]
    sources = [(ROOT / "tests" / "candidates" / n / "triton_ok.py").read_text() for n in names]
    tmp = Path(tempfile.mkdtemp(prefix="kernelevo-scale-"))
    print(
        f"{device}: up to {n_max} {'GPUs' if device == 'cuda' else 'CPU workers'}, "
        f"{args.per_gpu} candidates per GPU, tasks {', '.join(names)}",
        file=sys.stderr,
        flush=True,
    )

    def candidate(k: int) -> tuple[Any, Path]:
        i = k % len(tasks)
        path = tmp / f"c{k:04d}_{names[i]}.py"
        path.write_text(f"{sources[i]}\n# scale bench nonce {secrets.token_hex(8)}\n")
        return tasks[i], path

    t0 = time.monotonic()
    d = LocalDispatcher(
        device,
        gpus=list(range(n_max)) if device == "cuda" else None,
        workers=n_max if device != "cuda" else None,
    )
    slots = list(d.pool)
    try:

        def warm(slot: Any) -> None:  # every task once on every worker, untimed
            for k in range(len(tasks)):
                task, path = candidate(
                    10_000 + 100 * slots.index(slot) + k
                )  # a file per worker: they run at once
                v = verify_candidate(task, path, evaluator=slot.handle, device=device, seed=0)
                if v.status != "verified":
                    raise SystemExit(
                        f"warm-up on {slot.label}: {names[k]} is {v.status}: {v.reason}"
                    )

        with ThreadPoolExecutor(len(slots)) as ex:
            list(ex.map(warm, slots))
        warm_s = time.monotonic() - t0
        print(
            f"warm: {warm_s:.0f} s ({', '.join(f'{s.label} {s.gpu_name}' for s in slots)})",
            file=sys.stderr,
            flush=True,
        )

        results = []
        for n in range(1, n_max + 1):
            d.pool = SlotPool(slots[:n])  # the first n warm workers
            queue = [candidate(n * 1000 + k) for k in range(args.per_gpu * n)]
            statuses: dict[str, int] = {}
            per_worker: dict[str, int] = {}
            lock = threading.Lock()

            def one(
                item: tuple[Any, Path],
                lock: threading.Lock = lock,
                statuses: dict[str, int] = statuses,
                per_worker: dict[str, int] = per_worker,
            ) -> None:
                v = d.evaluate(item[0], item[1], 0)
                with lock:
                    statuses[v.status] = statuses.get(v.status, 0) + 1
                    per_worker[v.device["worker"]] = per_worker.get(v.device["worker"], 0) + 1

            t = time.monotonic()
            with ThreadPoolExecutor(n + 2) as ex:
                list(ex.map(one, queue))
            wall = time.monotonic() - t
            rate = len(queue) / wall * 60
            results.append(
                {
                    "gpus": n,
                    "candidates": len(queue),
                    "wall_s": round(wall, 2),
                    "per_minute": round(rate, 2),
                    "statuses": statuses,
                    "per_worker": per_worker,
                }
            )
            print(
                f"{n}: {len(queue)} candidates in {wall:.1f} s = {rate:.1f}/min {statuses} {per_worker}",
                file=sys.stderr,
                flush=True,
            )
    finally:
        d.pool = SlotPool(slots)
        d.close()

    base = results[0]["per_minute"]
    for r in results:
        r["ratio_to_linear"] = round(r["per_minute"] / (r["gpus"] * base), 3) if base else None
    print(
        table(
            [
                "GPUs" if device == "cuda" else "workers",
                "candidates",
                "wall s",
                "per minute",
                "x vs 1",
                "ratio to linear",
                "per worker",
            ],
            [
                [
                    r["gpus"],
                    r["candidates"],
                    r["wall_s"],
                    r["per_minute"],
                    round(r["per_minute"] / base, 2),
                    r["ratio_to_linear"],
                    " ".join(f"{k}:{v}" for k, v in sorted(r["per_worker"].items())),
                ]
                for r in results
            ],
        )
    )
    all_verified = all(set(r["statuses"]) == {"verified"} for r in results)
    ratios = [r["ratio_to_linear"] for r in results[1:]]
    goals = [
        goal(
            "every candidate verified",
            all_verified,
            "; ".join(f"{r['gpus']}: {r['statuses']}" for r in results),
        )
    ]
    if device == "cuda" and ratios:
        goals.append(
            goal(
                f"ratio to linear >= {GOAL_RATIO} up to {n_max} GPUs",
                min(ratios) >= GOAL_RATIO,
                ", ".join(f"{r['gpus']} GPUs {r['ratio_to_linear']}" for r in results),
            )
        )
    else:
        goals.append(
            goal(
                f"ratio to linear >= {GOAL_RATIO}",
                None,
                "not judged: "
                + ("one GPU only" if device == "cuda" else "CPU workers share the cores"),
            )
        )
    write_json(
        "scale",
        {
            "environment": environment(),
            "device": device,
            "tasks": names,
            "per_gpu": args.per_gpu,
            "warm_s": round(warm_s, 1),
            "gpu_names": [s.gpu_name for s in slots],
            "results": results,
            "goals": goals,
        },
        args.out,
    )
    return 0 if all_verified else 1


if __name__ == "__main__":
    raise SystemExit(main())
