"""How many model requests to keep in flight so the evaluation slots (GPUs) stay busy.

A proposal waits for its model reply (tens of seconds) and then holds a slot for its
verdict (about a second). With W proposals in flight, each cycling through reply latency L
and verdict time V, the slots are busy about W*V/(L+V) of the time per slot; to keep S slots
busy a fraction f of the time takes W = f*S*(L+V)/V. L and V are measured as the run goes
(moving averages), and W stays within [lowest, cap]: `cap` starts at the user's limit on open
requests and follows the provider's rate limit, halved when a request was answered 429 and
raised by one for every 4 calls answered without (a token or dollar budget limits W further
through its reservations).
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field

TARGET_BUSY = 0.8
SMOOTHING = 0.3
PRIOR_REPLY_S = 20.0  # until measured: a typical frontier model's reply to a kernel prompt
PRIOR_VERDICT_S = 2.0  # and a typical GPU verdict (checks on several input sets, then timing)


@dataclass
class Throughput:
    slots: int = 1
    lowest: int = 1
    highest: int = 32
    fixed: int | None = None  # the user's --concurrency: no adapting
    reply_s: float | None = None  # moving averages
    verdict_s: float | None = None
    active: int = 0
    cap: int | None = None  # the rate limit's current share of `highest`
    calls_since_limit: int = 0
    busy_s: float = 0.0  # slot-seconds spent evaluating
    started: float = field(default_factory=time.monotonic)
    _cond: asyncio.Condition | None = None

    def target(self) -> int:
        if self.fixed is not None:
            return max(1, self.fixed)
        reply, verdict = self.reply_s or PRIOR_REPLY_S, self.verdict_s or PRIOR_VERDICT_S
        want = math.ceil(TARGET_BUSY * self.slots * (reply + verdict) / verdict)
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

    def _mix(self, old: float | None, new: float) -> float:
        return new if old is None else (1 - SMOOTHING) * old + SMOOTHING * new

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
            self.reply_s = self._mix(self.reply_s, seconds)
        await self._changed()

    async def saw_verdict(self, seconds: float) -> None:
        self.busy_s += seconds
        if seconds > 0:
            self.verdict_s = self._mix(self.verdict_s, seconds)
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
