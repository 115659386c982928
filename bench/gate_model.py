"""A model, not a measurement: how busy k slots keep one GPU under the gate's rules, with every
step of a verdict replaced by a sleep of its measured length.

Each slot runs verdicts back to back through the real `kernelevo.gpu_gate.GpuGate` (a search
whose model requests keep a queue, as the derived number in flight does). A verdict's steps and
their host and GPU seconds are those of a warm kbf-l1-14 verdict (a 2.66 ms cuBLAS product and a
Triton kernel) profiled on an H100 (bench/profile_verdict.py, 2026-12-06, f1e960c:
docs/benchmarks-history/2026-12-06-profile-verdict-kbf14-f1e960c-h100.txt); each step sleeps
its host part, then marks its GPU part busy and sleeps it, one slot's GPU part at a time (the
contexts of several processes take turns on one GPU). "GPU busy" is the union of those marks
over the window. Three rule sets:

- before: the gate held exclusive from the timing sets to the bound, and a check phase never
  steps aside (as at a959c14);
- after: exclusive only for the candidate's timing, the baselines and the back-to-back calls
  (with the pilot's outputs checked before the next calls reuse their buffers);
  a verdict steps aside for a waiting timing after the load, after each input set, between the
  steps that check its own timed outputs and before its clean-up (as at 6492be2);
- timing: as after, but exclusive only for the candidate's timing and the baselines; the
  wall-clock cross-check's back-to-back calls run with the gate shared (other slots' check
  phases beside them), stepping aside between its steps (the judge since then; its retry with
  the GPU alone, after an attempt that contention made inconsistent, is left out).

What it leaves out: contention between slots' host work, the cost of the GPU switching between
slots' contexts (free here), a wall time stretched by another slot's kernels, replies that
arrive in bursts, cold verdicts. It predicts which slot count to measure and what the rules
change; only bench/search_throughput.py on a GPU measures it. That left out dominates at many
slots: on an H100 (2026-12-07, docs/BENCHMARKS.md) 8 slots kept the GPU 51 % busy where this
model gives 91-92 %, the parts of a verdict 2 to 6 times their length at 2 slots.

    python bench/gate_model.py --slots 1,2,4,8 --seconds 20 --scale 0.2 [--check-host 0.5]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelevo.gpu_gate import GateHold, GpuGate

# (host s, GPU s) per step, from the profile named above
LOAD = (0.07, 0.0)
SETS = [(0.10, 0.011)] + [(0.022, 0.0055)] * 4  # the first set is refilled and run again
POLICY = (0.05, 0.006)  # the report, the library-op and kernel policies
TIMING_SETS = (0.01, 0.0)
CHECK_OUT = (0.019, 0.001)  # one back-to-back call's outputs checked by the judge
TIME = (0.005, 0.085)  # the candidate's timing (the baselines are kept from an earlier verdict)
CROSS = [(0.004, 0.027), (0.015, 0.0), CHECK_OUT, (0.004, 0.09), (0.015, 0.0)]  # pilot, attempt
ALONE = [TIME, *CROSS]
AFTER = [CHECK_OUT, (0.03, 0.0)]  # the last call's outputs checked, the bound
CLEANUP = (0.034, 0.0)


class Clock:
    def __init__(self, scale: float, check_host: float = 1.0) -> None:
        self.scale = scale
        self.check_host = check_host  # the check phase's host seconds times this (what-if)
        self.busy: list[tuple[float, float]] = []
        self.lock = threading.Lock()
        self.gpu = threading.Lock()  # one GPU: contexts of several processes take turns on it

    def step(self, host_s: float, gpu_s: float) -> None:
        time.sleep(host_s * self.scale)
        if gpu_s:
            with self.gpu:
                t = time.monotonic()
                with self.lock:
                    self.busy.append((t, t + gpu_s * self.scale))
                time.sleep(gpu_s * self.scale)

    def busy_fraction(self, start: float, end: float) -> float:
        spans = sorted((max(a, start), min(b, end)) for a, b in self.busy if b > start and a < end)
        total, reach = 0.0, start
        for a, b in spans:
            if b > reach:
                total += b - max(a, reach)
                reach = b
        return total / (end - start)


RULES = ("before", "after", "timing")


def verdict(clock: Clock, gate: GpuGate | None, rules: str) -> None:
    hold: GateHold | None = gate.hold("task") if gate else None
    after = rules != "before"
    alone, shared = ([TIME], CROSS + AFTER) if rules == "timing" else (ALONE, AFTER)

    def aside() -> None:
        if after and hold is not None:
            hold.pause_for_timing(lambda: clock.step(0.001, 0), lambda: clock.step(0.001, 0))

    h = clock.check_host
    clock.step(LOAD[0] * h, LOAD[1])
    aside()
    for s in SETS:
        clock.step(s[0] * h, s[1])
        aside()
    clock.step(POLICY[0] * h, POLICY[1])
    if after:
        clock.step(*TIMING_SETS)
    if hold is not None:
        hold.time_alone()
    if not after:
        clock.step(*TIMING_SETS)
    for s in alone + ([] if after else shared):
        clock.step(*s)
    if hold is not None:
        hold.timing_done()
    for s in shared if after else []:
        aside()
        clock.step(*s)
    aside()
    clock.step(*CLEANUP)
    if hold is not None:
        hold.release()


def run(
    slots: int, rules: str, seconds: float, scale: float, check_host: float = 1.0
) -> dict[str, float]:
    clock = Clock(scale, check_host)
    gate = GpuGate(slots) if slots > 1 else None
    if gate is not None:
        gate.learn("task", 0.1, 80.0)
    done: list[float] = []
    stop = time.monotonic() + seconds

    def slot() -> None:
        while time.monotonic() < stop:
            verdict(clock, gate, rules)
            done.append(time.monotonic())

    threads = [threading.Thread(target=slot) for _ in range(slots)]
    start = time.monotonic()
    for t in threads:
        t.start()
    warm = start + seconds * 0.2  # the first verdicts start together: left out
    for t in threads:
        t.join()
    n = sum(1 for d in done if warm <= d <= stop)
    return {
        "slots": slots,
        "rules": rules,
        "verdicts_per_s": round(n / ((stop - warm) / scale), 2),
        "gpu_busy": round(clock.busy_fraction(warm, stop), 3),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--slots", default="1,2,4,8")
    ap.add_argument("--seconds", type=float, default=20.0, help="wall seconds per row")
    ap.add_argument("--scale", type=float, default=0.2, help="every step's length times this")
    ap.add_argument(
        "--check-host",
        type=float,
        default=1.0,
        help="what if a check phase's host work took this share",
    )
    ap.add_argument("--rules", default=",".join(RULES), help=f"of {', '.join(RULES)}")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = [
        run(k, rules, args.seconds, args.scale, args.check_host)
        for k in (int(x) for x in args.slots.split(","))
        for rules in args.rules.split(",")
    ]
    print(
        f"{'slots':<6}{'rules':<8}{'verdicts/s':>11}{'GPU busy':>10}  (a model: see the docstring)"
    )
    for r in rows:
        print(
            f"{r['slots']:<6}{r['rules']:<8}{r['verdicts_per_s']:>11}{100 * r['gpu_busy']:>8.0f} %"
        )
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
