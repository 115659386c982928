"""Where a measured window went on each GPU's gate: what share of it some verdict held the GPU
alone to time, alone for a big or not yet measured task, only shared holds (check phases,
clean-ups), or no verdict held it at all. Read from the gate stretches every verdict records
(`phases.gpu_gate.held`, kernelevo/gpu_gate.py), on the engine's monotonic clock.

Beside the GPU's busy fraction it says which stretch to shorten: a window mostly held alone for
timing is bounded by the timing; one mostly held by nobody, by what a verdict does off the gate.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

KINDS = ("timing_alone", "memory_alone", "shared", "none")


def _stretches(verdict: dict[str, Any]) -> list[tuple[float, float, str]]:
    gate = (verdict.get("phases") or {}).get("gpu_gate")
    out = []
    for held in (gate or {}).get("held") or [] if isinstance(gate, dict) else []:
        start, end = held.get("from"), held.get("to")
        if not isinstance(start, (int, float)) or not isinstance(end, (int, float)):
            continue
        if held.get("as") == "exclusive":
            kind = "timing_alone" if held.get("for") == "timing" else "memory_alone"
        else:
            kind = "shared"
        out.append((float(start), float(end), kind))
    return out


def timeline(verdicts: Iterable[dict[str, Any]], start: float, end: float) -> dict[str, Any]:
    """Per GPU (the verdict's `device.gpu_index`), each kind's share of [start, end]; a moment
    counts for the strongest hold then (timing alone, memory alone, shared, none)."""
    by_gpu: dict[str, list[tuple[float, float, str]]] = {}
    for v in verdicts:
        gpu = str((v.get("device") or {}).get("gpu_index"))
        by_gpu.setdefault(gpu, []).extend(_stretches(v))
    span = max(end - start, 1e-9)
    out: dict[str, Any] = {}
    for gpu, stretches in sorted(by_gpu.items()):
        if not stretches:
            continue
        edges = sorted(
            {start, end, *(t for s, e, _ in stretches for t in (s, e) if start < t < end)}
        )
        share = dict.fromkeys(KINDS, 0.0)
        for a, b in itertools.pairwise(edges):
            mid = (a + b) / 2
            held = {k for s, e, k in stretches if s <= mid < e}
            kind = next((k for k in KINDS[:3] if k in held), "none")
            share[kind] += b - a
        out[gpu] = {k: round(v / span, 3) for k, v in share.items()}
    return out
