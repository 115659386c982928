"""What `kernelevo apply` needs, stored in a run's summary, to guard the best kernel: the inputs
it was verified on (dtypes, devices, shapes), where, and for which source."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kernelevo.search.population import Program

if TYPE_CHECKING:
    from kernelevo.search.loop import SearchConfig
    from kernelevo.task import TaskFile


def apply_guard(
    best: Program | None, cfg: SearchConfig, run_id: str, task: TaskFile | None = None
) -> dict[str, Any]:
    """What `kernelevo apply` needs to guard the kernel: the inputs it was verified on, and where,
    and at which size (`small`: the task's SMALL overrides, so its constructor arguments too)."""
    if best is None:
        return {}
    size = cfg.size or ("default" if cfg.device == "cuda" else "small")
    if size == "small" and (task is None or not task.hints.get("SMALL")):
        size = "default"
    v = best.verdict
    inputs = v.inputs
    tensors = [a for row in inputs for a in row if a.get("kind") == "tensor"]
    t = v.timings or {}
    return {
        "verified": True,
        "run_id": run_id,
        "backend": "cuda" if best.backend.startswith("cuda") else best.backend,
        "gpu": (v.device or {}).get("name", ""),
        "date": time.strftime("%Y-%m-%d"),
        "inputs": inputs,
        "size": size,
        "dtypes": sorted({a["dtype"] for a in tensors}),
        "devices": sorted({a["device"] for a in tensors}),
        "shapes": [[a["shape"] for a in row if a.get("kind") == "tensor"] for row in inputs],
        "speedups": {"eager": t.get("speedup_eager"), "compile": t.get("speedup_compile")},
        "source_hash": cfg.source_hash,
        "target_id": cfg.target_id,
        "source_file": cfg.source_file,
    }
