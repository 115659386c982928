"""Spending limits shared by every proposal in flight: tokens, dollars, wall time, iterations.

The rule that makes concurrent proposals unable to overspend:

  A call is admitted only if  used + reserved + estimate <= limit,  where `reserved` is the
  sum of the estimates of calls still in flight and `estimate` is the call's estimated input
  tokens plus its max_tokens (dollars likewise, at the model's dearest input and output
  prices). When the call ends its reservation is replaced by what it really used
  (`charge`), or dropped if it failed (`release`).

Output can never exceed max_tokens, so as long as the input estimate is an upper bound (the
layer's estimate, UTF-8 bytes / 3, is one for real tokenisers) the limit is never exceeded,
whatever the concurrency. If a server reports more input than estimated, the overshoot is at
most that difference for the calls in flight, and no call is admitted afterwards. The run
stops no earlier than when the next call's reservation no longer fits: what is left unspent
is less than one call's estimate.

Tokens counted are all a call processed: input + output + cache reads + cache writes.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelevo.llm.types import Usage


class BudgetExhausted(Exception):
    """Raised by `reserve`/`start_iteration` when the budget cannot cover what was asked."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Reservation:
    id: int
    tokens: int
    usd: float


class Budget:
    """Thread-safe (and so safe from any number of asyncio tasks: no method awaits)."""

    def __init__(
        self,
        tokens: int | None = None,
        usd: float | None = None,
        wall_s: float | None = None,
        iterations: int | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.tokens, self.usd, self.wall_s, self.iterations = tokens, usd, wall_s, iterations
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._open: dict[int, Reservation] = {}
        self._refused: str | None = None
        self.used = Usage()
        self.iterations_started = 0

    @property
    def used_tokens(self) -> int:
        return self.used.total_tokens

    @property
    def used_usd(self) -> float:
        return self.used.cost_usd

    @property
    def reserved_tokens(self) -> int:
        with self._lock:
            return sum(r.tokens for r in self._open.values())

    @property
    def elapsed_s(self) -> float:
        return self._clock() - self._start

    def reserve(self, tokens: int, usd: float = 0.0) -> Reservation:
        """Claim room for one call before making it; raises BudgetExhausted if it does not fit."""
        with self._lock:
            reason = self._hard_limit_reason() or self._fit_reason(tokens, usd)
            if reason:
                self._refused = reason
                raise BudgetExhausted(reason)
            r = Reservation(next(self._ids), tokens, usd)
            self._open[r.id] = r
            return r

    def charge(self, usage: Usage, reservation: Reservation | None = None) -> None:
        """Record what a call used, replacing its reservation."""
        with self._lock:
            if reservation is not None:
                self._open.pop(reservation.id, None)
            self.used = self.used + usage
            self._refused = None  # room may have been freed: the next reserve decides again

    def release(self, reservation: Reservation) -> None:
        """Give back the room of a call that failed (providers bill no tokens for errors)."""
        with self._lock:
            self._open.pop(reservation.id, None)
            self._refused = None

    def start_iteration(self) -> int:
        """Count one search iteration; raises BudgetExhausted once the iteration cap is reached."""
        with self._lock:
            reason = self._hard_limit_reason()
            if reason:
                raise BudgetExhausted(reason)
            self.iterations_started += 1
            return self.iterations_started

    def exhausted(self) -> str | None:
        """Why the run must stop, or None. A refused reservation counts only while nothing is in
        flight and nothing was charged since (a call that used less than reserved frees room)."""
        with self._lock:
            return self._hard_limit_reason() or (self._refused if not self._open else None)

    def time_spent(self) -> str | None:
        """The wall-time limit's reason once it is reached, else None: what work that spends no
        tokens (the parameter search after the loop) still stops at."""
        with self._lock:
            return self._time_reason()

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "tokens": self.used.total_tokens,
                "cost_usd": round(self.used.cost_usd, 6),
                "cost_known": self.used.cost_known,
                "reserved_tokens": sum(r.tokens for r in self._open.values()),
                "in_flight": len(self._open),
                "iterations": self.iterations_started,
                "elapsed_s": round(self.elapsed_s, 3),
            }

    def _hard_limit_reason(self) -> str | None:
        if self.tokens is not None and self.used.total_tokens >= self.tokens:
            return f"token budget spent: {self.used.total_tokens:,} of {self.tokens:,} tokens"
        if self.usd is not None and self.used.cost_usd >= self.usd:
            return f"cost budget spent: ${self.used.cost_usd:.4f} of ${self.usd:.2f}"
        if reason := self._time_reason():
            return reason
        if self.iterations is not None and self.iterations_started >= self.iterations:
            return (
                f"iteration budget spent: {self.iterations_started} of {self.iterations} iterations"
            )
        return None

    def _time_reason(self) -> str | None:
        if self.wall_s is not None and self.elapsed_s >= self.wall_s:
            return f"time budget spent: {self.elapsed_s:.0f} s of {self.wall_s:g} s"
        return None

    def _fit_reason(self, tokens: int, usd: float) -> str | None:
        reserved_t = sum(r.tokens for r in self._open.values())
        reserved_u = sum(r.usd for r in self._open.values())
        if self.tokens is not None and self.used.total_tokens + reserved_t + tokens > self.tokens:
            left = self.tokens - self.used.total_tokens - reserved_t
            return (
                f"token budget: the next call may use up to {tokens:,} tokens, "
                f"{max(left, 0):,} of {self.tokens:,} are left"
            )
        if self.usd is not None and self.used.cost_usd + reserved_u + usd > self.usd:
            left_usd = self.usd - self.used.cost_usd - reserved_u
            return (
                f"cost budget: the next call may cost up to ${usd:.4f}, ${max(left_usd, 0):.4f} of "
                f"${self.usd:.2f} is left"
            )
        return None
