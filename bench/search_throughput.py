"""How busy the GPU is during a search whose model replies take realistic time, with the old
fixed number of requests in flight (2, the old default) and with the number derived from the
measured reply and verdict times.

The model is a paced replay (kernelevo.llm.replay with pace=True): every answer is a distinct
correct softmax kernel and takes --reply-s seconds, as a frontier model's answer does. Both
searches share one warmed dispatcher, start new proposals for --wall-s seconds each, and are
sampled by `nvidia-smi --query-gpu=utilization.gpu` every 100 ms. GPU busy is the mean utilization
from the first reply (nothing can be evaluated before it) to the end of the wall time: the steady
state. The loop's own slot-busy fraction (seconds a verdict held the GPU slot over the whole
search, idle start and tail included) is printed too; without a GPU only that is measured.

    python bench/search_throughput.py --device cuda --reply-s 20 --wall-s 40
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelevo.llm.replay import ReplayProvider  # noqa: E402
from kernelevo.optimize import optimize_task  # noqa: E402
from kernelevo.search.loop import SearchConfig  # noqa: E402
from kernelevo.store import Store  # noqa: E402

TASK = ROOT / "examples" / "softmax.py"
KERNEL = (ROOT / "tests" / "candidates" / "softmax" / "triton_ok.py").read_text()


def replay_file(path: Path, tag: str, n: int, reply_s: float) -> Path:
    """n distinct kernels (a comment differs, so none is answered from the verdict cache)."""
    with path.open("w") as f:
        for i in range(n):
            code = KERNEL.replace("class ModelNew", f"# {tag} variant {i}\n\n\nclass ModelNew", 1)
            f.write(
                json.dumps(
                    {
                        "text": f"A fused row softmax.\n\n```python\n{code}```\n",
                        "latency_s": reply_s,
                        "usage": {"input_tokens": 3000, "output_tokens": 900},
                    }
                )
                + "\n"
            )
    return path


class Sampler:
    """nvidia-smi utilization samples with their times, in a background thread."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self.proc: subprocess.Popen[str] | None = None
        if shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(
                [
                    "nvidia-smi",
                    "--query-gpu=utilization.gpu",
                    "--format=csv,noheader,nounits",
                    "-lms",
                    "100",
                    "-i",
                    "0",
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.samples.append((time.monotonic(), float(line.strip())))
            except ValueError:
                pass

    def mean(self, start: float, end: float) -> float | None:
        window = [u for t, u in self.samples if start <= t <= end]
        return sum(window) / len(window) / 100.0 if window else None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()


def one(
    mode: str, args: argparse.Namespace, dispatcher: object, work: Path, sampler: Sampler
) -> dict:
    cfg = SearchConfig(
        provider="replay",
        device=args.device,
        iterations=None,
        wall_s=args.wall_s,
        concurrency=2 if mode == "old" else None,
        max_in_flight=args.max_in_flight,
        repair_tries=0,
        offline_seeds=False,
        tune_evals=0,
        n_islands=2,
    )
    provider = ReplayProvider(
        replay_file(work / f"{mode}.jsonl", mode, 200, args.reply_s), pace=True
    )
    store = Store(work / f"{mode}.sqlite")
    t0 = time.monotonic()
    result = optimize_task(TASK, cfg, store=store, provider=provider, dispatcher=dispatcher)  # type: ignore[arg-type]
    t1 = time.monotonic()
    summary = store.get_run(result.run_id).summary  # type: ignore[union-attr]
    tp = summary.get("throughput") or {}
    return {
        "mode": mode,
        "evaluated": sum(result.counts.values()),
        "verified": result.counts.get("verified", 0),
        "in_flight": tp.get("in_flight_target"),
        "reply_s": tp.get("reply_s"),
        "verdict_s": tp.get("verdict_s"),
        "slot_busy": tp.get("slot_busy_fraction"),
        "gpu_busy": sampler.mean(t0 + args.reply_s, t0 + args.wall_s),
        "elapsed_s": round(t1 - t0, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reply-s", type=float, default=20.0)
    ap.add_argument("--wall-s", type=float, default=40.0)
    ap.add_argument("--max-in-flight", type=int, default=64)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from kernelevo.dispatch.local import LocalDispatcher

    work = Path(tempfile.mkdtemp(prefix="kernelevo-throughput-"))
    dispatcher = LocalDispatcher(args.device, store=Store(work / "warm.sqlite"))
    sampler = Sampler()
    rows = []
    try:
        warm = (
            work / "warm.py"
        )  # the first verdict starts the worker and compiles: not part of either search
        warm.write_text(KERNEL.replace("class ModelNew", "# warm-up\n\n\nclass ModelNew", 1))
        t = time.monotonic()
        print(
            f"warm-up verdict: {dispatcher.evaluate(TASK, warm, 0).status} in {time.monotonic() - t:.1f} s",
            flush=True,
        )
        for mode in ("old", "new"):
            rows.append(one(mode, args, dispatcher, work, sampler))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        sampler.stop()
        dispatcher.close()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "search_throughput.json").write_text(
            json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}, indent=2)
        )
    print(f"\nreply {args.reply_s:g} s, {args.wall_s:g} s per search, device {args.device}")
    print(f"{'in flight':<22}{'evaluated':>10}{'slot busy':>11}{'GPU busy':>10}{'verdict s':>11}")
    for r in rows:
        label = "2 (old default)" if r["mode"] == "old" else f"derived ({r['in_flight']})"
        gpu = f"{100 * r['gpu_busy']:.0f} %" if r["gpu_busy"] is not None else "-"
        print(
            f"{label:<22}{r['evaluated']:>10}{100 * (r['slot_busy'] or 0):>10.0f}%{gpu:>10}{r['verdict_s'] or 0:>11.2f}"
        )
    old, new = rows
    if old["slot_busy"] and new["slot_busy"]:
        print(f"slot busy ratio new/old: {new['slot_busy'] / old['slot_busy']:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
