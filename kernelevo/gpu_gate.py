"""Several evaluation slots on one GPU, with timing kept exclusive.

Most of a verdict is host work (tensors across processes, comparisons, Python), so one slot
per GPU leaves the GPU idle most of a search. With k slots per GPU (each its own judge and
runner host) the correctness checks of k verdicts overlap; a verdict's timing (its
candidate's timing and the baselines) must still see the GPU alone. The gate of one GPU is a
readers-writer lock: a verdict holds it shared for its whole check phase, exclusive while it
times and shared again for what follows (the wall-clock cross-check's back-to-back calls, which
other verdicts' work can only slow, exclusive again for a retry; the checks of their outputs,
the bound, its clean-up); a waiting timer blocks new check phases
(writer preference). A verdict also steps aside for a waiting timer wherever nothing of its
own is on the GPU (`pause_for_timing`: after its load, between the steps of each input set,
between the steps after its timing): its candidate's process is stopped (SIGSTOP, by the runner
host) and it takes the gate shared again after the timing, so a timer waits for one step of
each verdict then running, not for whole check phases. Timing cannot starve: a verdict already
in reaches its next pause or its end within its time limits, and none starts or resumes while
a timer waits.

Memory: k slots hold k tasks' inputs at once. A task whose need (the judge's memory plan,
`need_gib` of its probe or begin) exceeds the GPU's memory / (3 k), or whose need is not yet
known on this GPU, holds the gate exclusive: an unknown task only until its begin has
told its need (then it steps down to shared if it is small), a big task for its whole
verdict, so big tasks never overlap anything.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class GateInterval:
    """One stretch a verdict held its GPU's gate: as "shared" or "exclusive", for what."""

    held_as: str
    purpose: str  # "checks", "timing", "cleanup", "memory" (a big or not yet measured task)
    start: float  # time.monotonic()
    end: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"as": self.held_as, "for": self.purpose, "from": self.start, "to": self.end}


class SharedFirstAttempts:
    """Whether the wall-clock cross-checks on this GPU lately passed their first attempt with the
    GPU shared. Beside other slots' checks of a heavy kernel the shared attempt is stretched past
    the rule's ratio in most verdicts (109 of 138 at 8 slots on an H100), and each such verdict
    then paid that attempt, a calibration and a second wait for the GPU alone. Where most of the
    last WINDOW first attempts needed that retry, the cross-check runs inside the timing's own
    stretch instead; every EVERY-th one is still tried shared, so the record follows the load."""

    WINDOW = 8
    EVERY = 8

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._retried: deque[bool] = deque(maxlen=self.WINDOW)
        self._alone_in_a_row = 0

    def alone_first(self) -> bool:
        """Whether the next cross-check should take its first attempt alone."""
        with self._lock:
            enough = len(self._retried) >= self.WINDOW // 2
            if not enough or 2 * sum(self._retried) <= len(self._retried):
                return False
            if self._alone_in_a_row + 1 >= self.EVERY:
                self._alone_in_a_row = 0
                return False
            self._alone_in_a_row += 1
            return True

    def record(self, retried: bool) -> None:
        """A cross-check whose first attempt was shared: whether it needed the retry alone."""
        with self._lock:
            self._retried.append(retried)


class GpuGate:
    """Shared by the k evaluators of one GPU; thread-safe."""

    def __init__(self, slots: int) -> None:
        self.slots = max(1, slots)
        self.first_attempts = SharedFirstAttempts()
        self._cv = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._exclusive_waiting = 0
        self._timers_waiting = 0  # of those, the timings (never a task that must be alone)
        self._need_gib: dict[str, float] = {}  # task hash|size -> the task's memory need
        self.memory_gib: float | None = None  # the device's, as its judge reports it

    def learn(self, task_key: str, need_gib: Any, memory_gib: Any = None) -> None:
        """A task's memory need (and the device's memory) as the judge measured them."""
        with self._cv:
            if isinstance(need_gib, (int, float)):
                self._need_gib[task_key] = float(need_gib)
            if isinstance(memory_gib, (int, float)) and memory_gib > 0:
                self.memory_gib = float(memory_gib)
            self._cv.notify_all()

    def needs_gpu_alone(self, task_key: str) -> bool:
        """Whether this task's verdicts may not overlap any other on this GPU (memory)."""
        with self._cv:
            return self._alone(task_key)

    def _alone(self, task_key: str) -> bool:
        need = self._need_gib.get(task_key)
        if self.slots == 1:
            return False
        if need is None or self.memory_gib is None:
            return True
        return need > self.memory_gib / (3 * self.slots)

    # -- the lock ----------------------------------------------------------------------
    def _take_exclusive(self) -> None:
        self._exclusive_waiting += 1
        self._timers_waiting += 1
        self._cv.notify_all()  # check phases at a pause point step aside
        try:
            while self._exclusive or self._shared:
                self._cv.wait()
        finally:
            self._exclusive_waiting -= 1
            self._timers_waiting -= 1
        self._exclusive = True

    def _give(self, held_as: str) -> None:
        if held_as == "exclusive":
            self._exclusive = False
        else:
            self._shared -= 1
        self._cv.notify_all()

    def hold(self, task_key: str) -> GateHold:
        """Enter one verdict's check phase: shared, or exclusive while its task is big or unknown."""
        return GateHold(self, task_key)


@dataclass(eq=False)
class GateHold:
    """One verdict's hold on its GPU's gate, from its first request to its clean-up."""

    gate: GpuGate
    task_key: str
    held_as: str | None = None
    waited_s: float = 0.0
    paused_s: float = 0.0  # stepped aside for other verdicts' timings
    timing_waited_s: float = 0.0  # the part of waited_s its own timing waited for the GPU alone
    intervals: list[GateInterval] = field(default_factory=list)

    def __post_init__(self) -> None:
        gate = self.gate
        t0 = time.monotonic()
        with gate._cv:
            waiting = False  # counted among the exclusive waiters, which block new shared entries
            while True:  # the task's need may become known while this waits
                alone = gate._alone(self.task_key)
                if alone != waiting:
                    gate._exclusive_waiting += 1 if alone else -1
                    waiting = alone
                    gate._cv.notify_all()
                if alone and not (gate._exclusive or gate._shared):
                    gate._exclusive_waiting -= 1
                    gate._exclusive = True
                    break
                if not alone and not (gate._exclusive or gate._exclusive_waiting):
                    gate._shared += 1
                    break
                gate._cv.wait()
            self._start("exclusive" if alone else "shared", "memory" if alone else "checks")
        self.waited_s += time.monotonic() - t0

    # stretches are closed before the gate is given and opened once it is taken (under its lock)
    def _end(self) -> None:
        if self.intervals and self.intervals[-1].end is None:
            self.intervals[-1].end = time.monotonic()

    def _start(self, held_as: str, purpose: str) -> None:
        self.held_as = held_as
        self.intervals.append(GateInterval(held_as, purpose, time.monotonic()))

    def learned(self, need_gib: Any, memory_gib: Any) -> None:
        """The begin's memory plan is in: a small task steps down to shared (other check phases
        may enter; nothing already allocated is at risk, since no one else held the GPU)."""
        self.gate.learn(self.task_key, need_gib, memory_gib)
        self._step_down("checks")

    def time_alone(self) -> None:
        """Nothing else runs on this GPU from here to `timing_done` (the timing, and a retried
        wall-clock cross-check); called again for such a retry."""
        t0 = time.monotonic()
        with self.gate._cv:
            self._end()
            if self.held_as != "exclusive":
                self.gate._give("shared")
                self.gate._take_exclusive()
            self._start("exclusive", "timing")
        waited = time.monotonic() - t0
        self.timing_waited_s += waited
        self.waited_s += waited

    def pause_for_timing(self, stop: Callable[[], None], resume: Callable[[], None]) -> bool:
        """At a point where this verdict has nothing on the GPU (between input sets, and after
        its own timing between the steps that check it): if a timing waits, `stop` the
        candidate's process, give the gate to the timing, take it shared again once no timing
        waits, then `resume` the process. Whether it paused. A verdict holding the gate
        exclusive (a big or unmeasured task) never pauses."""
        gate = self.gate
        with gate._cv:
            if self.held_as != "shared" or not gate._timers_waiting:
                return False
        stop()
        t0 = time.monotonic()
        try:
            with gate._cv:
                purpose = self.intervals[-1].purpose if self.intervals else "checks"
                self._end()
                gate._give("shared")
                while gate._exclusive or gate._exclusive_waiting:
                    gate._cv.wait()
                gate._shared += 1
                self._start("shared", purpose)
        finally:
            self.paused_s += time.monotonic() - t0
            resume()
        return True

    def timing_done(self) -> None:
        """The timing is over: what follows (the wall-clock cross-check, the checks of its
        outputs, closing the candidate's process, the judge's end) holds the gate shared, so
        other check phases may enter, while no other timing starts before `release` except where
        this verdict steps aside (`pause_for_timing`, between the cross-check's steps and before
        it closes its candidate). A big task keeps it exclusive: its memory is not freed yet."""
        self._step_down("cleanup")

    def _step_down(self, purpose: str) -> None:
        """Exclusive to shared for `purpose`, unless the task is one that must be alone."""
        with self.gate._cv:
            if self.held_as != "exclusive" or self.gate._alone(self.task_key):
                return
            self._end()
            self.gate._exclusive = False
            self.gate._shared += 1
            self._start("shared", purpose)
            self.gate._cv.notify_all()

    def release(self) -> None:
        if self.held_as is None:
            return
        with self.gate._cv:
            self._end()
            self.gate._give(self.held_as)
            self.held_as = None

    def record(self) -> dict[str, Any]:
        """What goes into the verdict's phases: the wait and every stretch held."""
        return {
            "waited_s": round(self.waited_s, 4),
            "paused_s": round(self.paused_s, 4),
            "timing_waited_s": round(self.timing_waited_s, 4),
            "held": [i.to_dict() for i in self.intervals],
        }
