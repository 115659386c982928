"""What applying a run's kernel needs to know about the run, as one record.

The search writes these facts into the run's summary in the store
(kernelevo/search/apply_guard.py); `kernelevo apply` and the language server read them back with
`ApplyFacts.of_run` (the one place that knows the older summary forms), and the planner
(apply.py, apply_inputs.py) reads fields. The record crosses to the server's plan worker as its
`wire()` map and is parsed back there, every field's kind checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kernelevo.worker.protocol import Reply


@dataclass(frozen=True)
class ApplyFacts(Reply):
    """`inputs`: one list of argument descriptions per verified input set ({"kind": "tensor",
    "shape", "dtype", "device"} or {"kind": "value", "repr"}), or, from older runs, only their
    `shapes`; `size`: the size they were verified at ("small": the task's SMALL overrides, so its
    constructor arguments too); `init_args`: the constructor arguments the regression test uses
    (None: read them from `task_source`'s get_init_inputs()); `source_hash`: the target's hash when
    the search started; `grad`: verified under autograd (otherwise autograd falls back)."""

    run_id: str
    backend: str
    verified: bool = False
    status: str = ""
    source_hash: str = ""
    inputs: list[Any] = field(default_factory=list)
    shapes: list[Any] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    size: str = "default"
    init_args: list[Any] | None = None
    task_source: str = ""
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    gpu: str = ""
    date: str = ""
    grad: bool = False

    @classmethod
    def of_run(cls, summary: Mapping[str, Any], **given: Any) -> ApplyFacts:
        """The facts a run's stored summary holds, then `given` (what the caller knows better: the
        run's id, the hash the search started from, the task's source). Older summaries kept the
        speedups at the top, the hash under `target`, and said `status: verified`."""
        speedups = summary.get("speedups") or {}
        init_args = summary.get("init_args")
        facts = cls(
            run_id=str(summary.get("run_id") or ""),
            backend=str(summary.get("backend") or ""),
            verified=summary.get("verified") is True or summary.get("status") == "verified",
            status=str(summary.get("status") or ""),
            source_hash=str(
                summary.get("source_hash") or (summary.get("target") or {}).get("source_hash") or ""
            ),
            inputs=list(summary.get("inputs") or []),
            shapes=list(summary.get("shapes") or []),
            dtypes=[str(d) for d in summary.get("dtypes") or []],
            devices=[str(d) for d in summary.get("devices") or []],
            size=str(summary.get("size") or "default"),
            init_args=list(init_args) if init_args is not None else None,
            task_source=str(summary.get("task_source") or ""),
            speedup_eager=speedups.get("eager", summary.get("speedup_eager")),
            speedup_compile=speedups.get("compile", summary.get("speedup_compile")),
            gpu=str(summary.get("gpu") or ""),
            date=str(summary.get("date") or ""),
            grad=bool(summary.get("grad", False)),
        )
        return replace(facts, **given)

    @property
    def device_kinds(self) -> set[str]:
        """The kinds of device the kernel was verified on ("cuda", "cpu"), without indices."""
        return {d.split(":")[0] for d in self.devices}


def task_source_at(path: str | None) -> str:
    """A run's task file as it is now, or "" where it is gone (its folder removed): both Apply
    paths (`kernelevo apply`, the editor's) read it for the task's constructor arguments."""
    if not path:
        return ""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return ""
