"""Evaluating candidates on every GPU of a machine, or on many machines (Ray).

A dispatcher is what a search calls to evaluate one candidate: it takes a free slot of
the task's GPU model, runs the verifier there and gives the slot back. Losing a worker
(a killed process, a dead Ray actor or node) is not the candidate's fault: the candidate
is queued again, and only its own verdict is kept. Every verdict records where it was
produced (`device`: gpu_index, gpu_name, worker, host, attempts).

    from kernelevo.scale import open_dispatcher
    with open_dispatcher("cuda", gpus=[0, 1]) as d:       # or cluster="auto"
        verdict = d.evaluate(task, "cand.py", seed=0)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol

from kernelevo.scale.slots import DispatchError, Slot, SlotPool
from kernelevo.verdict import Verdict

__all__ = [
    "RAY_MISSING",
    "DispatchError",
    "Dispatcher",
    "PooledDispatcher",
    "Slot",
    "SlotPool",
    "lost_worker",
    "open_dispatcher",
]

RAY_MISSING = "--cluster needs Ray, which is not installed: pip install 'kernelevo[ray]'"

_LOST = re.compile(r"crashed \(signal (9|15)\)|worker did not start|worker died:")


class Dispatcher(Protocol):
    device: str
    pool: SlotPool

    @property
    def capacity(self) -> int: ...

    def evaluate(
        self, task: Any, candidate: str | Path, seed: int | None = None, *, size: str | None = None
    ) -> Verdict: ...

    def close(self) -> None: ...


class PooledDispatcher:
    """What the local and the Ray dispatcher answer from their slot pool alike."""

    device: str
    pool: SlotPool
    lost: int
    requeued: int

    @property
    def capacity(self) -> int:
        return self.pool.capacity

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
    d = verdict.to_dict() if isinstance(verdict, Verdict) else verdict
    return d.get("status") in ("runtime_error", "compile_error") and bool(
        _LOST.search(d.get("reason") or "")
    )


def annotate(verdict: Verdict, slot: Slot, attempts: int) -> Verdict:
    """Record where the verdict was produced (a cached one keeps where it was first produced)."""
    here = slot.describe()
    if verdict.cached:
        here.update({k: v for k, v in (verdict.device or {}).items() if k in here})
    verdict.device = {**(verdict.device or {}), **here, "attempts": attempts}
    return verdict


def open_dispatcher(
    device: str | None = None,
    *,
    gpus: list[int] | None = None,
    workers: int | None = None,
    cluster: str | None = None,
    store: Any = None,
    timeout: float | None = None,
) -> Dispatcher:
    """A local dispatcher (a worker per GPU, or `workers` CPU workers), or a Ray one when
    `cluster` is given ("auto", "local", "ray://HOST:PORT" or a GCS "HOST:PORT")."""
    if cluster:
        try:
            import ray  # noqa: F401
        except ImportError as exc:
            raise DispatchError(RAY_MISSING) from exc
        from kernelevo.cluster.ray_dispatch import RayDispatcher

        return RayDispatcher(cluster, device=device, workers=workers, store=store, timeout=timeout)
    from kernelevo.scale.local import LocalDispatcher

    return LocalDispatcher(device, gpus=gpus, workers=workers, store=store, timeout=timeout)
