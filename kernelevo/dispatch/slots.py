"""Evaluation slots (one per GPU, or per CPU worker) and who may use which.

A task's candidates are timed only on GPUs of one model: speedups from an H100 and an
A100 are not comparable, so the search must never rank one against the other. The
first candidate of a task pins the task to a model: the model whose GPUs carry the
fewest pinned tasks per GPU (ties: the model with most GPUs), so one search on a mixed
machine runs on its majority model and many searches spread over all models. A task is
moved to another model only when every GPU of its model is gone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


class DispatchError(Exception):
    """No slot can ever take this evaluation (every worker is gone)."""


@dataclass(eq=False)
class Slot:
    label: str  # "gpu0", "cpu1", "node-a/gpu3"
    gpu_name: str  # the GPU model ("NVIDIA H200"), "cpu" without a GPU
    handle: Any  # what evaluates: an Evaluator, a Ray actor handle
    gpu_index: int | str | None = None
    host: str = ""
    busy_with: str | None = None  # the candidate being evaluated
    evaluations: int = 0
    losses: int = 0  # workers lost in a row on this slot
    info: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """What goes into a verdict's `device` record."""
        return {
            "gpu_index": self.gpu_index,
            "gpu_name": self.gpu_name,
            "worker": self.label,
            "host": self.host,
        }

    def accepts(self, stored: dict[str, Any] | None) -> bool:
        """A stored verdict counts here only if it was made on this slot's GPU model."""
        made_on = ((stored or {}).get("device") or {}).get("gpu_name")
        return stored is not None and not (made_on and made_on != self.gpu_name)

    def stamp(self, verdict: dict[str, Any]) -> dict[str, Any]:
        """The verdict as stored: with where it was made."""
        return {**verdict, "device": {**(verdict.get("device") or {}), **self.describe()}}


class SlotPool:
    """Thread-safe: `acquire` blocks until a slot of the task's model is free."""

    def __init__(self, slots: list[Slot] | None = None) -> None:
        self._cv = threading.Condition()
        self._slots: list[Slot] = []
        self._free: list[Slot] = []
        self._pinned: dict[str, str] = {}  # task hash -> GPU model
        self.pending = 0  # replacements being started
        for s in slots or []:
            self.add(s)

    # -- membership ------------------------------------------------------------------
    def add(self, slot: Slot) -> None:
        with self._cv:
            self._slots.append(slot)
            self._free.append(slot)
            self._cv.notify_all()

    def retire(self, slot: Slot) -> None:
        """Take a slot out for good (its worker is gone and will not come back)."""
        with self._cv:
            if slot in self._slots:
                self._slots.remove(slot)
            if slot in self._free:
                self._free.remove(slot)
            models = {s.gpu_name for s in self._slots}
            if self.pending == 0:
                self._pinned = {t: m for t, m in self._pinned.items() if m in models}
            self._cv.notify_all()

    def expect(self, n: int = 1) -> None:
        """`n` slots are being (re)started: waiters keep waiting instead of failing."""
        with self._cv:
            self.pending += n
            self._cv.notify_all()

    def expected_done(self, n: int = 1) -> None:
        with self._cv:
            self.pending = max(0, self.pending - n)
            if self.pending == 0:
                models = {s.gpu_name for s in self._slots}
                self._pinned = {t: m for t, m in self._pinned.items() if m in models}
            self._cv.notify_all()

    def __iter__(self) -> Iterator[Slot]:
        with self._cv:
            return iter(list(self._slots))

    def __len__(self) -> int:
        with self._cv:
            return len(self._slots)

    @property
    def capacity(self) -> int:
        return len(self)

    def capacity_for(self, task_hash: str) -> int:
        """Slots a task's candidates may use (all slots of its model)."""
        with self._cv:
            model = self._model_for(task_hash)
            return sum(1 for s in self._slots if s.gpu_name == model) or len(self._slots)

    def models(self) -> dict[str, int]:
        with self._cv:
            out: dict[str, int] = {}
            for s in self._slots:
                out[s.gpu_name] = out.get(s.gpu_name, 0) + 1
            return out

    # -- use -------------------------------------------------------------------------
    def _model_for(self, task_hash: str) -> str | None:
        model = self._pinned.get(task_hash)
        sizes: dict[str, int] = {}
        for s in self._slots:
            sizes[s.gpu_name] = sizes.get(s.gpu_name, 0) + 1
        if model in sizes:
            return model
        if not sizes:
            return None
        load = {m: sum(1 for v in self._pinned.values() if v == m) for m in sizes}
        model = min(sizes, key=lambda m: (load[m] / sizes[m], -sizes[m], m))
        self._pinned[task_hash] = model
        return model

    def pinned_model(self, task_hash: str) -> str | None:
        with self._cv:
            return self._model_for(task_hash)

    def acquire(self, task_hash: str, what: str, timeout: float | None = None) -> Slot:
        with self._cv:
            while True:
                if not self._slots and self.pending == 0:
                    raise DispatchError("no evaluation worker is left (all were lost)")
                model = self._model_for(task_hash)
                slot = next((s for s in self._free if s.gpu_name == model), None)
                if slot is not None:
                    self._free.remove(slot)
                    slot.busy_with = what
                    return slot
                if not self._cv.wait(timeout):
                    raise DispatchError(f"no free evaluation worker within {timeout} s")

    def release(self, slot: Slot) -> None:
        with self._cv:
            slot.busy_with = None
            if slot in self._slots and slot not in self._free:
                self._free.append(slot)
            self._cv.notify_all()

    def in_flight(self) -> list[tuple[Slot, str]]:
        with self._cv:
            return [(s, s.busy_with) for s in self._slots if s.busy_with is not None]
