"""How many model requests to keep in flight so the evaluation slots (GPUs) stay busy.

A proposal waits for its model reply (tens of seconds) and then holds a slot for its
verdict (a fraction of a second to a few seconds). With W proposals in flight, each cycling
through reply latency L and verdict time V, S slots are offered W*V/(L+V) slot-seconds of work
per second; below 1 per slot they idle, above it a queue forms and they stay busy even when
replies arrive in bursts. W = LOAD*S*(L+V)/V with LOAD a little above 1 keeps a candidate
waiting. L and V are the medians of the latest replies and verdicts (one cold verdict that
started a worker or compiled a baseline does not hold W down), with a prior per device until
measured; W stays within [lowest, cap]: `cap` starts at the user's limit on open requests and
follows the provider's rate limit, halved when a request was answered 429 and raised by one for
every 4 calls answered without (a token or dollar budget limits W further through its
reservations). A search with an iteration budget keeps W within a quarter of it, so that its
proposals come in at least ROUNDS rounds and those after the first see earlier verdicts: with
20 iterations and W of 46, every proposal was written from the seeds alone.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections import deque
from dataclasses import dataclass, field

LOAD = 1.1
ROUNDS = 4  # a search's proposals in at least this many rounds of feedback
WINDOW = 8  # latest samples the medians are taken over
PRIOR_REPLY_S = 20.0  # until measured: a typical frontier model's reply to a kernel prompt
# and a typical verdict's hold on its slot (0.2-0.7 s on an H200 after the first in
# docs/benchmarks-history/2026-12.md, ~1 s with two slots in docs/BENCHMARKS.md; ~2 s in
# Triton's CPU interpreter): replaced by the measured medians as verdicts come in
PRIOR_VERDICT_S = {"cuda": 0.5, "cpu": 2.0}


@dataclass
class Throughput:
    slots: int = 1
    lowest: int = 1
    highest: int = 32
    fixed: int | None = None  # the user's --concurrency: no adapting
    iterations: int | None = None  # the search's iteration budget, if it has one
    device: str = "cuda"
    replies: deque[float] = field(default_factory=deque)  # the latest seconds, WINDOW of each
    verdicts: deque[float] = field(default_factory=deque)
    active: int = 0
    cap: int | None = None  # the rate limit's current share of `highest`
    calls_since_limit: int = 0
    busy_s: float = 0.0  # slot-seconds spent evaluating
    started: float = field(default_factory=time.monotonic)
    _cond: asyncio.Condition | None = None

    def __post_init__(self) -> None:
        self.replies = deque(self.replies, maxlen=WINDOW)
        self.verdicts = deque(self.verdicts, maxlen=WINDOW)

    @property
    def reply_s(self) -> float | None:
        return statistics.median(self.replies) if self.replies else None

    @property
    def verdict_s(self) -> float | None:
        return statistics.median(self.verdicts) if self.verdicts else None

    def target(self) -> int:
        if self.fixed is not None:
            return max(1, self.fixed)
        reply = self.reply_s or PRIOR_REPLY_S
        verdict = self.verdict_s or PRIOR_VERDICT_S.get(self.device, PRIOR_VERDICT_S["cuda"])
        want = math.ceil(LOAD * self.slots * (reply + verdict) / verdict)
        if self.iterations is not None:
            want = min(want, math.ceil(self.iterations / ROUNDS))
        return max(self.lowest, min(self.highest if self.cap is None else self.cap, want))

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    async def admit(self) -> None:
        """Wait until one more proposal may start."""
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: self.active < self.target())
            self.active += 1

    async def done(self) -> None:
        cond = self._condition()
        async with cond:
            self.active -= 1
            cond.notify_all()

    async def _changed(self) -> None:
        cond = self._condition()
        async with cond:
            cond.notify_all()

    async def saw_reply(self, seconds: float, rate_limited: bool = False) -> None:
        """A reply arrived after `seconds`; `rate_limited`: the provider answered 429 on the way."""
        if rate_limited:
            self.cap = max(self.lowest, min(self.cap or self.highest, max(self.active, 2)) // 2)
            self.calls_since_limit = 0
        elif self.cap is not None:
            self.calls_since_limit += 1
            if self.calls_since_limit >= 4:
                self.cap, self.calls_since_limit = min(self.highest, self.cap + 1), 0
        if seconds > 0:
            self.replies.append(seconds)
        await self._changed()

    async def saw_verdict(self, seconds: float) -> None:
        self.busy_s += seconds
        if seconds > 0:
            self.verdicts.append(seconds)
            await self._changed()

    def busy_fraction(self) -> float:
        wall = time.monotonic() - self.started
        return self.busy_s / (wall * max(1, self.slots)) if wall > 0 else 0.0

    def snapshot(self) -> dict[str, float | int | None]:
        return {
            "in_flight_target": self.target(),
            "rate_limit_cap": self.cap,
            "reply_s": _r(self.reply_s),
            "verdict_s": _r(self.verdict_s),
            "slot_busy_fraction": round(self.busy_fraction(), 3),
        }


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 3)
