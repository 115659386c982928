"""The rule that cross-checks a candidate's claimed time with the judge's wall time of its calls.

The candidate process times itself (CUDA events), so its median is a claim. The judge asks
it for n calls back to back and measures the wall time of the whole request; real GPU work
cannot finish faster than it runs, so wall per call >= the real GPU time per call G. A claim
more than CLAIM_RATIO below that wall is rejected, unless the wall is under a host floor:
below the floor, launch overhead on the host (Python, the launches) can explain the gap, for
an honest forward whose kernels are shorter than its launches. On a busy machine (other
processes on the cores, other contexts time-slicing the GPU) that overhead grows, and the wall
mean counts the bursts that the event median leaves out: an honest kernel claiming 0.14 ms was
seen at 0.42 ms per call with eight test processes beside it on an H200.

Why the rule is safe against a forged timer, with the two allowances for a busy host:
- Retries. An inconsistent measurement is taken again (MAX_ATTEMPTS in all, each sized to
  ~WALL_TARGET_S) and the candidate passes if any attempt is consistent. A candidate can make
  an attempt slower, never faster than its GPU work: wall >= G on every attempt, so retrying
  gives a forger no attempt on which a claim far below G passes unless G is under the floor.
  The first attempt may share the GPU with other verdicts' checks, which only lengthen it; the
  judge takes the GPU alone for the retries (kernelevo/judge/timing_check.py), and for every
  attempt where shared first attempts on that GPU lately needed a retry anyway.
- Calibration. After an inconsistent attempt the judge process (which never runs candidate
  code) times a loop of trivial launches (kernelevo/judge/host_probe.py) against an idle
  host's; that slowdown scales the floor: floor = HOST_FLOOR_MS * min(slowdown, MAX_SLOWDOWN).
  What makes the judge's trusted launches slow (busy cores, a time-sliced GPU) slows an honest
  candidate's launches alike.
Bound: whatever the host, an accepted claim C satisfies C >= G / CLAIM_RATIO or
G <= HOST_FLOOR_MS * MAX_SLOWDOWN (0.8 ms). A candidate that made the machine slow on purpose
(work left queued on the GPU; a thread left running is refused by the sandbox) buys at most
that floor. Every claim also meets the compulsory-bytes and compute bound
(kernelevo/judge/baselines.py), and the outputs of every attempt are checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

CLAIM_RATIO = 3.0  # claimed time may be this much below the judge's wall time per call...
HOST_FLOOR_MS = 0.2  # ...once a call is longer than an idle host's launch overhead can explain
MAX_SLOWDOWN = 4.0  # a busy host raises that floor by at most this factor
MAX_ATTEMPTS = 3
PILOT_CALLS = 10  # a first few calls size the attempts
# each attempt's calls take about this long (at 0.25 s, 23 % of a 1.19 s verdict on the H200)
WALL_TARGET_S = 0.1
CONTENDED = 1.5  # a probe this much slower than idle: a rejection names host contention


def consistent(claimed_ms: float, wall_ms: float, floor_ms: float = HOST_FLOOR_MS) -> bool:
    return not (wall_ms > floor_ms and claimed_ms * CLAIM_RATIO < wall_ms)


def calls_for(per_call_ms: float) -> int:
    """Calls back to back that take about WALL_TARGET_S at `per_call_ms` each."""
    return int(max(10, min(2000, WALL_TARGET_S * 1e3 / max(per_call_ms, 1e-3))))


@dataclass
class Calibration:
    """How busy the machine was, measured by the judge just after an attempt."""

    ms_per_launch: float
    idle_ms_per_launch: float

    @property
    def slowdown(self) -> float:
        return max(self.ms_per_launch / max(self.idle_ms_per_launch, 1e-9), 1.0)

    @property
    def floor_ms(self) -> float:
        return HOST_FLOOR_MS * min(self.slowdown, MAX_SLOWDOWN)

    def detail(self) -> dict[str, Any]:
        return {**asdict(self), "slowdown": round(self.slowdown, 3), "floor_ms": self.floor_ms}


@dataclass
class WallAttempt:
    """One measurement: n calls back to back; the calibration when the plain floor rejected it."""

    calls: int
    wall_ms_per_call: float
    round_trip_ms: float
    calibration: Calibration | None = None

    @property
    def floor_ms(self) -> float:
        return self.calibration.floor_ms if self.calibration else HOST_FLOOR_MS

    @property
    def slowdown(self) -> float:
        return self.calibration.slowdown if self.calibration else 1.0

    def consistent(self, claimed_ms: float) -> bool:
        return consistent(claimed_ms, self.wall_ms_per_call, self.floor_ms)

    def detail(self, claimed_ms: float) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "wall_ms_per_call": self.wall_ms_per_call,
            "round_trip_ms": self.round_trip_ms,
            "floor_ms": self.floor_ms,
            "consistent": self.consistent(claimed_ms),
            "calibration": self.calibration.detail() if self.calibration else None,
        }


@dataclass
class CrossCheck:
    """The attempts of one cross-check and their verdict."""

    claimed_ms: float
    pilot_ms_per_call: float = 0.0
    attempts: list[WallAttempt] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return any(a.consistent(self.claimed_ms) for a in self.attempts)

    @property
    def best(self) -> WallAttempt:
        """The consistent attempt, or else the one with the smallest wall per call."""
        ok = [a for a in self.attempts if a.consistent(self.claimed_ms)]
        return ok[0] if ok else min(self.attempts, key=lambda a: a.wall_ms_per_call)

    def detail(self) -> dict[str, Any]:
        b = self.best
        return {
            "claimed_ms": self.claimed_ms,
            "wall_ms_per_call": b.wall_ms_per_call,
            "calls": b.calls,
            "round_trip_ms": b.round_trip_ms,
            "host_floor_ms": b.floor_ms,
            "host_slowdown": round(b.slowdown, 3),
            "pilot_ms_per_call": self.pilot_ms_per_call,
            "rule": f"reject when wall > floor and claimed * {CLAIM_RATIO:g} < wall on each of up "
            f"to {MAX_ATTEMPTS} attempts; floor = {HOST_FLOOR_MS:g} ms, or on a busy machine "
            f"{HOST_FLOOR_MS:g} ms * min(slowdown, {MAX_SLOWDOWN:g})",
            "attempts": [a.detail(self.claimed_ms) for a in self.attempts],
        }

    def summary(self) -> str:
        b = self.best
        where = f"attempt {self.attempts.index(b) + 1} of {len(self.attempts)}"
        if b.calibration:
            where += f"; a busy machine ({b.slowdown:.1f}x slower) raised the floor to {b.floor_ms:.3g} ms"
        return f"{b.calls} back-to-back calls: {b.wall_ms_per_call:.4g} ms each from the judge's side ({where})"

    def rejection(self) -> str:
        b = self.best
        why = (
            f"timing inconsistent: the candidate process reported {self.claimed_ms:.4g} ms per "
            f"call, but {b.calls} calls back to back took {b.wall_ms_per_call:.4g} ms each as the "
            f"judge measured them (the smallest of {len(self.attempts)} attempts; more than "
            f"{CLAIM_RATIO:g}x the claim and above the host floor of {b.floor_ms:.3g} ms"
        )
        if b.calibration:
            c = b.calibration
            why += (
                f"; the judge's trivial launches took {c.ms_per_launch * 1e3:.3g} us each, "
                f"{c.slowdown:.1f}x an idle host's {c.idle_ms_per_launch * 1e3:.3g} us"
            )
        why += ")"
        slowest = max(a.slowdown for a in self.attempts)
        gap = b.wall_ms_per_call / max(self.claimed_ms, 1e-9)
        if slowest >= CONTENDED and gap <= CLAIM_RATIO * slowest:  # a gap contention can explain
            return (
                f"{why}; the machine was busy (the judge's own trivial launches took {slowest:.1f}x "
                "their idle time), which can slow a launch-bound forward this much: run it again on an idle "
                "machine; if it fails there too, a patched timer or work outside the timed window?"
            )
        return f"{why}; a patched timer or work outside the timed window?"


def cross_check(
    claimed_ms: float,
    measure: Callable[[int], tuple[float, float]],
    calibrate: Callable[[], Calibration],
    before_retry: Callable[[], None] | None = None,
) -> CrossCheck:
    """Measure until an attempt is consistent or MAX_ATTEMPTS are spent.

    `measure(n)`: the judge's wall ms per call of n calls back to back and the round trip ms it
    subtracted; `calibrate()`: how busy the machine is now, asked only after an attempt the
    plain floor rejects; `before_retry()`: run before each attempt after the first (the judge
    takes its GPU alone there, so that other verdicts' work, which may run beside a first
    attempt, never decides a rejection). A pilot of PILOT_CALLS sizes the first attempt (a claim
    far below the truth would otherwise ask for thousands of long calls), later attempts are
    sized from the smallest wall so far: in all about PILOT_CALLS calls plus MAX_ATTEMPTS *
    WALL_TARGET_S and the calibrations, whatever the claim."""
    pilot, _ = measure(PILOT_CALLS)
    result = CrossCheck(claimed_ms, pilot_ms_per_call=pilot)
    n = calls_for(max(claimed_ms, pilot))
    for attempt in range(MAX_ATTEMPTS):
        if attempt and before_retry is not None:
            before_retry()
        wall, rtt = measure(n)
        a = WallAttempt(n, wall, rtt)
        result.attempts.append(a)
        if a.consistent(claimed_ms):
            break
        a.calibration = calibrate()
        if a.consistent(claimed_ms):
            break
        n = calls_for(min(x.wall_ms_per_call for x in result.attempts))
    return result
