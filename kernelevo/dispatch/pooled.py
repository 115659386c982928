"""What every dispatcher is (`Dispatcher`), what the local and the Ray one share (their slot
pool), and how a verdict that says nothing about the candidate (a lost worker) is recognised."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any, Protocol

from kernelevo.dispatch.slots import Slot, SlotPool
from kernelevo.verdict import Verdict

HELD_WINDOW = 8


class Dispatcher(Protocol):
    device: str
    pool: SlotPool

    @property
    def capacity(self) -> int: ...

    def evaluate(
        self,
        task: Any,
        candidate: str | Path,
        seed: int | None = None,
        *,
        size: str | None = None,
        screen: bool = False,
    ) -> Verdict: ...

    def capacity_for(self, task: Any) -> int: ...

    def close(self) -> None: ...


class PooledDispatcher:
    """What the local and the Ray dispatcher answer from their slot pool alike."""

    device: str
    pool: SlotPool
    lost: int
    requeued: int
    held_s: deque[float]  # how long the latest fresh verdicts held their slot (HELD_WINDOW)

    @property
    def capacity(self) -> int:
        return self.pool.capacity

    def verdict_times(self) -> list[float]:
        """Seconds the latest fresh verdicts held a slot: a search started on a dispatcher that
        already judged candidates begins from these instead of a prior."""
        return list(self.held_s)

    def _held(self, verdict: Verdict) -> None:
        if not verdict.cached and verdict.steady_s > 0:
            self.held_s.append(verdict.steady_s)

    def capacity_for(self, task: Any) -> int:
        return self.pool.capacity_for(task.hash)

    def in_flight(self) -> list[tuple[Slot, str]]:
        return self.pool.in_flight()

    def _stats(self, kind: str) -> dict[str, Any]:
        per = {s.label: s.evaluations for s in self.pool}
        return {
            "kind": kind,
            "device": self.device,
            "workers": len(per),
            "models": self.pool.models(),
            "evaluations": sum(per.values()),
            "per_worker": per,
            "lost_workers": self.lost,
            "requeued": self.requeued,
        }

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> PooledDispatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def lost_worker(verdict: Verdict | dict[str, Any]) -> bool:
    """Was the worker killed from outside (SIGKILL/SIGTERM, or it could not start) rather than
    failing on the candidate? Such a verdict says nothing about the candidate."""
    if isinstance(verdict, Verdict):
        return verdict.worker_lost
    return bool(verdict.get("worker_lost"))


def annotate(verdict: Verdict, slot: Slot, attempts: int) -> Verdict:
    """Record where the verdict was produced (a cached one keeps where it was first produced)."""
    here = slot.describe()
    if verdict.cached:
        here.update({k: v for k, v in (verdict.device or {}).items() if k in here})
    verdict.device = {**(verdict.device or {}), **here, "attempts": attempts}
    return verdict
