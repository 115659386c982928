"""How busy the GPU is during a search whose model replies take realistic time, with the old
fixed number of requests in flight (2, the old default) and with the number the search derives
from the measured reply and verdict times.

The model is a paced replay (kernelevo.llm.replay with pace=True): every answer is a distinct
correct kernel (a comment inside the Triton kernel differs, so each one is compiled and verified
from scratch, as a new kernel is) and takes --reply-s seconds, as a frontier model's answer does.
The task is the softmax example (a 0.18 ms kernel: host work dominates a verdict) unless --task
and --kernel name another, e.g. a KernelBench task and a published kernel of the replay corpus.
Every search shares one warmed dispatcher and starts new proposals for --wall-s seconds. Busy is
measured over the window from the first moment a reply can arrive (--reply-s after the start)
to the end of the wall time, two ways:

- slot busy: the fraction of the window in which a verdict held the GPU's slot (the dispatcher
  gives one candidate at a time the GPU: checks, then timing against eager and torch.compile);
- GPU busy: the mean of NVML's utilization (`nvmlDeviceGetUtilizationRates`) sampled every 100 ms, the
  fraction of time a kernel (candidate, reference or baseline) was executing.

A verdict also spends host time while it holds the GPU (loading the candidate, comparing
outputs, passing tensors between the sandboxed processes), so GPU busy stays below slot busy even
with a queue; the "saturated" row measures that ceiling: --saturate candidates handed to the
dispatcher at once, nothing else running. Without a GPU only slot busy is measured.

`--slots-per-gpu 1,2` runs every row once per k (a fresh dispatcher with k evaluation slots on
the GPU, whose check phases overlap while each timing runs alone: kernelevo/gpu_gate.py);
"held" is then the share of the window in which at least one slot was held, and "cand ms" the
median candidate time, which should not move with k (timing fidelity).

    python bench/search_throughput.py --device cuda --reply-s 20 --wall-s 60 --modes new \
        --slots-per-gpu 1,2
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gate_timeline import timeline  # noqa: E402  (bench/, beside this script)

from kernelevo.llm.replay import ReplayProvider  # noqa: E402
from kernelevo.optimize import optimize_task  # noqa: E402
from kernelevo.search.events import SearchEvent, Started  # noqa: E402
from kernelevo.search.loop import SearchConfig  # noqa: E402
from kernelevo.store import Store  # noqa: E402

TASK = ROOT / "examples" / "softmax.py"
KERNEL = ROOT / "tests" / "candidates" / "softmax" / "triton_ok.py"
JIT_DEF = re.compile(r"@triton\.jit[^\n]*\n(?:@[^\n]*\n)*def [^\n]*\n")


def variant(kernel: str, tag: str, i: int) -> str:
    """A distinct kernel: the comment is inside the Triton function, so its cache key changes."""
    m = JIT_DEF.search(kernel)
    if m is None:
        raise SystemExit("--kernel: no @triton.jit function whose first line is its `def`")
    return kernel[: m.end()] + f"    # {tag} variant {i}\n" + kernel[m.end() :]


def replay_file(path: Path, kernel: str, tag: str, n: int, reply_s: float) -> Path:
    with path.open("w") as f:
        for i in range(n):
            code = variant(kernel, tag, i)
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
    """NVML utilization samples of GPU 0 with their times, every 100 ms in a background thread."""

    def __init__(self) -> None:
        from kernelevo.measure.gpus import utilization_samples

        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()

        def read() -> None:
            for busy in utilization_samples(0, 0.1, self._stop):
                self.samples.append((time.monotonic(), busy))

        threading.Thread(target=read, daemon=True).start()

    def mean(self, start: float, end: float) -> float | None:
        window = [u for t, u in self.samples if start <= t <= end]
        return sum(window) / len(window) / 100.0 if window else None

    def stop(self) -> None:
        self._stop.set()


class SlotSpans:
    """When the dispatcher's slots were held: its pool's acquire and release, timestamped."""

    def __init__(self, pool: object) -> None:
        self.spans: list[tuple[float, float]] = []
        self._open: dict[int, float] = {}
        acquire, release = pool.acquire, pool.release  # type: ignore[attr-defined]

        def timed_acquire(*a: object, **k: object) -> object:
            slot = acquire(*a, **k)
            self._open[id(slot)] = time.monotonic()
            return slot

        def timed_release(slot: object) -> None:
            start = self._open.pop(id(slot), None)
            if start is not None:
                self.spans.append((start, time.monotonic()))
            release(slot)

        pool.acquire, pool.release = timed_acquire, timed_release  # type: ignore[attr-defined]

    def busy(self, start: float, end: float) -> float:
        """The share of the window in which at least one slot was held (the union of the spans)."""
        covered, reach = 0.0, start
        for a, b in sorted(self.spans):
            a, b = max(a, reach), min(b, end)
            if b > a:
                covered, reach = covered + b - a, b
        return covered / (end - start) if end > start else 0.0


def median_ms(verdicts: list[dict]) -> float | None:
    times = [
        v["timings"]["candidate_ms"]
        for v in verdicts
        if (v.get("timings") or {}).get("candidate_ms")
    ]
    return round(statistics.median(times), 5) if times else None


def one(
    mode: str,
    args: argparse.Namespace,
    dispatcher: object,
    work: Path,
    sampler: Sampler,
    spans: SlotSpans,
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
        stop_at_floor=False,  # the replayed softmax kernels run at the copy peak: keep asking
        n_islands=2,
    )
    provider = ReplayProvider(
        replay_file(work / f"{mode}.jsonl", args.kernel_source, mode, 600, args.reply_s), pace=True
    )
    store = Store(work / f"{mode}.sqlite")
    began: list[float] = []  # when the search itself started (after the task's own checks)

    def events(event: SearchEvent) -> None:
        if isinstance(event, Started):
            began.append(time.monotonic())

    called = time.monotonic()
    cpu0, machine0 = _own_cpu_s(), _machine_cpu()
    result = optimize_task(
        args.task,
        cfg,
        store=store,
        provider=provider,
        dispatcher=dispatcher,
        events=events,
    )
    t1 = time.monotonic()
    engine_cpu_s = _own_cpu_s() - cpu0
    machine1 = _machine_cpu()
    t0 = began[0] if began else called
    summary = store.get_run(result.run_id).summary  # type: ignore[union-attr]
    tp = summary.get("throughput") or {}
    fresh = [
        c["verdict"] for c in store.candidates(result.run_id) if not c["verdict"].get("cached")
    ]
    held = [v.get("elapsed_s") or 0.0 for v in fresh]
    phases: dict[str, list[float]] = {}
    retried = alone_first = 0
    for v in fresh:
        for k, x in (v.get("phases") or {}).items():
            if k == "gpu_gate" and isinstance(x, dict):  # its waits, and its pauses for others
                for part in ("waited_s", "timing_waited_s", "paused_s"):
                    if isinstance(x.get(part), (int, float)):
                        phases.setdefault(f"gate_{part}", []).append(float(x[part]))
                continue
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                phases.setdefault(k, []).append(float(x))
        timings = v.get("timings") or {}
        for k, x in (timings.get("phases") or {}).items():  # the stretch with the GPU alone
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                phases.setdefault(f"timing_{k}", []).append(float(x))
        # a cross-check that needed a second attempt (another slot's work may slow the first)
        cross = timings.get("cross_check") or {}
        retried += len(cross.get("attempts") or []) > 1
        alone_first += cross.get("first_attempt") == "alone"  # joined the timing's stretch
    start, end = t0 + args.reply_s, t0 + args.wall_s
    return {
        "mode": mode,
        "evaluated": sum(result.counts.values()),
        "verified": result.counts.get("verified", 0),
        "in_flight": tp.get("in_flight_target"),
        "reply_s": tp.get("reply_s"),
        "verdict_s": round(statistics.median(held), 3) if held else None,
        "candidate_ms": median_ms(fresh),
        "slot_busy": round(spans.busy(start, end), 3),
        "gpu_busy": sampler.mean(start, end),
        "slot_busy_whole_run": tp.get("slot_busy_fraction"),
        "elapsed_s": round(t1 - t0, 1),
        "before_search_s": round(t0 - called, 1),
        "phase_medians_s": {k: round(statistics.median(v), 4) for k, v in phases.items()},
        "cross_check_retried": retried,
        "cross_check_alone_first": alone_first,
        # candidates handed a spare that had started ahead (else forked and started in the verdict)
        "spare_taken": sum(1 for v in fresh if (v.get("phases") or {}).get("spare_taken")),
        "gate_timeline": timeline(fresh, start, end),  # per GPU: who held the gate, how
        # this process (search, dispatcher, engine side of every verdict: one interpreter lock);
        # a share near 1.0 of the search's wall means the engine, not the GPU, sets the pace
        "engine_cpu_s_a_verdict": round(engine_cpu_s / max(1, sum(result.counts.values())), 4),
        "engine_cpu_share": round(engine_cpu_s / max(t1 - called, 1e-9), 3),
        # every core of the machine: near 1.0, the host's CPUs (workers, candidates) set the pace
        "machine_cpu_busy": _busy_between(machine0, machine1),
    }


def _own_cpu_s() -> float:
    """User and system CPU seconds of this process, all its threads together."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def _machine_cpu() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs since boot (/proc/stat), None where there is none."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    return sum(fields) - idle, sum(fields)


def _busy_between(a: tuple[int, int] | None, b: tuple[int, int] | None) -> float | None:
    if a is None or b is None or b[1] <= a[1]:
        return None
    return round((b[0] - a[0]) / (b[1] - a[1]), 3)


def saturated(
    args: argparse.Namespace, dispatcher: object, work: Path, sampler: Sampler, spans: SlotSpans
) -> dict:
    """--saturate fresh kernels handed to the dispatcher at once: the slot never waits for work."""
    paths = []
    for i in range(args.saturate):
        path = work / f"saturate_{i}.py"
        path.write_text(variant(args.kernel_source, "saturate", i))
        paths.append(path)
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(paths)) as ex:
        verdicts = list(ex.map(lambda p: dispatcher.evaluate(args.task, p, 0), paths))  # type: ignore[attr-defined]
    t1 = time.monotonic()
    start = min(a for a, _ in spans.spans if a >= t0)  # from the first candidate on the GPU
    return {
        "mode": "saturated",
        "evaluated": len(verdicts),
        "verified": sum(v.status == "verified" for v in verdicts),
        "in_flight": len(paths),
        "reply_s": 0.0,
        "verdict_s": round(statistics.median(v.elapsed_s for v in verdicts), 3),
        "candidate_ms": median_ms([v.to_dict() for v in verdicts]),
        "slot_busy": round(spans.busy(start, t1), 3),
        "gpu_busy": sampler.mean(start, t1),
        "elapsed_s": round(t1 - t0, 1),
    }


def with_slots(
    k: int | None, hosts: int, args: argparse.Namespace, work: Path, sampler: Sampler
) -> list[dict]:
    """Every row of this run on a fresh dispatcher with `k` evaluation slots per GPU (None: the
    dispatcher's default for this machine), each with `hosts` runner hosts taking turns."""
    from kernelevo.dispatch.local import LocalDispatcher

    dispatcher = LocalDispatcher(
        args.device, store=Store(work / "warm.sqlite"), slots_per_gpu=k, runner_hosts=hosts
    )
    spans = SlotSpans(dispatcher.pool)
    rows = []
    try:
        t = time.monotonic()
        dispatcher.warm()  # every run and compile worker, as `optimize` starts them
        warm = work / "warm.py"  # the first verdict compiles the baselines: not in any row
        warm.write_text(variant(args.kernel_source, "warm-up", 0))
        status = dispatcher.evaluate(args.task, warm, 0).status
        print(
            f"{dispatcher.slots_per_gpu} slot(s) per GPU, {hosts} runner host(s) each: "
            f"workers started, warm-up verdict {status}: "
            f"{time.monotonic() - t:.1f} s; compile workers: {dispatcher.compile_width}",
            flush=True,
        )
        if args.saturate:
            rows.append(saturated(args, dispatcher, work, sampler, spans))
        for mode in args.modes.split(","):
            rows.append(one(mode.strip(), args, dispatcher, work, sampler, spans))
    finally:
        dispatcher.close()
    return [
        {"slots_per_gpu": dispatcher.slots_per_gpu, "runner_hosts": hosts, **row} for row in rows
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reply-s", type=float, default=20.0)
    ap.add_argument("--wall-s", type=float, default=60.0)
    ap.add_argument("--max-in-flight", type=int, default=96)
    ap.add_argument("--modes", default="old,new", help="searches to run: old, new or both")
    ap.add_argument("--saturate", type=int, default=24, help="0: no saturated row")
    ap.add_argument(
        "--slots-per-gpu",
        default="1",
        help="k, or a list (1,2,auto): a row set per k (auto: the default here)",
    )
    ap.add_argument(
        "--runner-hosts",
        default="1",
        help="runner hosts a slot, or a list (1,2): a row set per slot count and host count",
    )
    ap.add_argument("--task", type=Path, default=TASK, help="the task searched (softmax example)")
    ap.add_argument(
        "--kernel", type=Path, default=KERNEL, help="a correct Triton candidate the replies vary"
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    args.kernel_source = args.kernel.read_text()

    root = Path(tempfile.mkdtemp(prefix="kernelevo-throughput-"))
    sampler = Sampler()
    rows = []
    try:
        for k in (None if x == "auto" else int(x) for x in args.slots_per_gpu.split(",")):
            for hosts in (int(x) for x in args.runner_hosts.split(",")):
                work = root / f"k{k or 'auto'}-h{hosts}"
                work.mkdir()
                for row in with_slots(k, hosts, args, work, sampler):
                    rows.append(row)
                    print(json.dumps(rows[-1]), flush=True)
    finally:
        sampler.stop()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "search_throughput.json").write_text(
            json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}, indent=2)
        )
    print(
        f"\n{args.task.name}, reply {args.reply_s:g} s, {args.wall_s:g} s per search, device {args.device}; busy from "
        f"{args.reply_s:g} s (the first reply) to {args.wall_s:g} s"
    )
    print(
        f"{'slots':<6}{'hosts':<6}{'in flight':<24}{'evaluated':>10}{'held':>7}{'GPU busy':>10}"
        f"{'verdict s':>11}{'cand ms':>10}{'engine CPU':>12}{'all CPUs':>10}"
    )
    for r in rows:
        label = {"old": "2 (old default)", "saturated": f"saturated ({r['in_flight']} queued)"}.get(
            r["mode"], f"derived ({r['in_flight']})"
        )
        gpu = f"{100 * r['gpu_busy']:.0f} %" if r["gpu_busy"] is not None else "-"
        cand = f"{r['candidate_ms']:.4f}" if r.get("candidate_ms") else "-"
        cpu = f"{100 * r['engine_cpu_share']:.0f} %" if "engine_cpu_share" in r else "-"
        cores = f"{100 * r['machine_cpu_busy']:.0f} %" if r.get("machine_cpu_busy") else "-"
        print(
            f"{r['slots_per_gpu']:<6}{r.get('runner_hosts', 1):<6}{label:<24}"
            f"{r['evaluated']:>10}{100 * r['slot_busy']:>5.0f} %"
            f"{gpu:>10}{r['verdict_s'] or 0:>11.2f}{cand:>10}{cpu:>12}{cores:>10}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
