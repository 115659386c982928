"""How busy the machine is at this moment, measured in the judge process (no candidate runs there).

The timing cross-check compares a candidate's claimed time (a median of event-timed calls)
with the wall time of its calls back to back (a mean). On a busy machine (other processes on
the cores, other contexts time-slicing the GPU) the launches of an honest, launch-bound
forward take longer than its kernels, and bursts count in the mean, not in the median: that
gap looks like a forged timer. This probe times a loop of trivial launches (one-element
in-place adds, a synchronisation every PROBE_LAUNCHES), mean wall per launch, against an
idle host's. (The reference's own calls back to back are no such measure: a small reference
is launch-bound on an idle host too, its wall many times its event time on CPU here.)
"""

from __future__ import annotations

import time

import torch

PROBE_LAUNCHES = 200
PROBE_ROUNDS = 5
# Per-launch wall of that loop on an idle host: CPU measured here (~0.003 ms, torch 2.13); the CUDA
# figure is an estimate (a launch from Python costs a few microseconds more), not yet measured on
# the H200. A judge that has seen its host faster compares with the fastest it saw instead.
IDLE_LAUNCH_MS = {"cpu": 0.004, "cuda": 0.008}

_fastest: dict[str, float] = {}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def launch_wall(device: torch.device) -> dict[str, float]:
    """The mean per-launch wall of the probe now (bursts count), and the idle figure to compare."""
    t = torch.zeros(1, device=device)
    _sync(device)
    start = time.perf_counter()
    for _ in range(PROBE_ROUNDS):
        for _ in range(PROBE_LAUNCHES):
            t.add_(1.0)
        _sync(device)
    now = (time.perf_counter() - start) / (PROBE_ROUNDS * PROBE_LAUNCHES) * 1e3
    key = str(device)
    _fastest[key] = min(_fastest.get(key, now), now)
    idle = min(_fastest[key], IDLE_LAUNCH_MS.get(device.type, IDLE_LAUNCH_MS["cuda"]))
    return {"ms_per_launch": now, "idle_ms_per_launch": idle}
