"""When and how long to wait before retrying a failed call.

The SDKs' own retries are switched off (max_retries=0) so that this policy is the only one:
bounded attempts, exponential backoff with seeded jitter, and the server's Retry-After
honoured. `base_s`, `rng` and `sleep` are injectable so tests run in milliseconds.
"""
from __future__ import annotations

import asyncio
import email.utils
import random
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Mapping

RETRYABLE_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))


@dataclass
class RetryPolicy:
    max_attempts: int = 5           # attempts in all, the first included
    base_s: float = 1.0             # first backoff; doubles each retry
    max_delay_s: float = 30.0       # cap on a computed backoff
    max_retry_after_s: float = 120.0  # cap on a server's Retry-After
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (1-based). A Retry-After wins (capped);
        otherwise base * 2**(retry-1), capped, scaled by a jitter factor in [0.5, 1)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after_s)
        backoff = min(self.base_s * 2 ** (retry - 1), self.max_delay_s)
        return backoff * (0.5 + 0.5 * self.rng.random())


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from `retry-after-ms`, or `retry-after` as seconds or an HTTP date."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
