"""Evaluating candidates on every GPU of a machine, or on many machines (Ray).

A dispatcher is what a search calls to evaluate one candidate: it takes a free slot of
the task's GPU model, runs the verifier there and gives the slot back. Losing a worker
(a killed process, a dead Ray actor or node) is not the candidate's fault: the candidate
is queued again, and only its own verdict is kept. Every verdict records where it was
produced (`device`: gpu_index, gpu_name, worker, host, attempts).

    from kernelevo.dispatch import open_dispatcher
    with open_dispatcher("cuda", gpus=[0, 1]) as d:       # or cluster="auto"
        verdict = d.evaluate(task, "cand.py", seed=0)
"""

from __future__ import annotations

from typing import Any

from kernelevo.dispatch.pooled import Dispatcher, PooledDispatcher, annotate, lost_worker
from kernelevo.dispatch.slots import DispatchError, Slot, SlotPool

__all__ = [
    "RAY_MISSING",
    "DispatchError",
    "Dispatcher",
    "PooledDispatcher",
    "Slot",
    "SlotPool",
    "annotate",
    "lost_worker",
    "open_dispatcher",
]

RAY_MISSING = "--cluster needs Ray, which is not installed: pip install 'kernelevo[ray]'"


def open_dispatcher(
    device: str | None = None,
    *,
    gpus: list[int] | None = None,
    workers: int | None = None,
    cluster: str | None = None,
    store: Any = None,
    timeout: float | None = None,
    slots_per_gpu: int | None = 1,
) -> Dispatcher:
    """A local dispatcher (`slots_per_gpu` slots per GPU, None for as many as this machine suits,
    or per each of `workers` CPU workers), or a Ray one when `cluster` is given ("auto", "local",
    "ray://HOST:PORT" or a GCS "HOST:PORT")."""
    if cluster:
        if (slots_per_gpu or 1) > 1:
            raise DispatchError(
                "--slots-per-gpu is for this machine's GPUs; leave it out with --cluster"
            )
        try:
            import ray  # noqa: F401
        except ImportError as exc:
            raise DispatchError(RAY_MISSING) from exc
        from kernelevo.dispatch.ray_actors import RayDispatcher

        return RayDispatcher(cluster, device=device, workers=workers, store=store, timeout=timeout)
    from kernelevo.dispatch.local import LocalDispatcher

    return LocalDispatcher(
        device,
        gpus=gpus,
        workers=workers,
        store=store,
        timeout=timeout,
        slots_per_gpu=slots_per_gpu,
    )
