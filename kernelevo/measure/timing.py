"""The timing protocol: the numbers the search trusts, measured the same way for every function.

Runs inside the evaluation worker. Import this module before any candidate code is loaded:
it keeps its own references to the clock, CUDA events and device synchronisation, so a
candidate that monkey-patches `torch.cuda.synchronize`, `torch.cuda.Event` or
`time.perf_counter` afterwards does not change what is measured (`tampered()` reports it).

Protocol per measured call on CUDA: flush L2 (unless rotating input sets already evicts it),
queue a short spin kernel (so the device is still busy while the host launches the call's
kernels: launch latency is not timed; when the device had passed the start event before the
call returned, the spin doubles and the sample is taken again), record a start event, call,
record an end event on the stream, synchronise the whole device, record a second end event.
The stream time is what is reported (it agrees with do_bench);
when the device-wide time exceeds it by more than an empty call's synchronisation gap,
work escaped the stream (a side stream, a thread) and the device-wide figures are reported
instead, flagged `escaped_stream`. Functions are warmed up, then timed round-robin in one
process, until the median is known to `target_rel_ci` or a run/time limit is reached.
Without CUDA the same protocol runs on a host clock, so the logic is tested on CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import torch

from kernelevo.measure.timers import (  # noqa: F401  (public API)
    DEFAULT_FLUSH_BYTES,
    MAX_DELAY_CYCLES,
    MIN_DELAY_CYCLES,
    REAL_CUDA,
    RETAKES,
    CudaApi,
    CudaTimer,
    HostTimer,
    Timer,
    flush_needed,
    l2_flush_bytes,
)
from kernelevo.measure.timing_primitives import tampered  # noqa: F401  (public API)
from kernelevo.measure.timing_stats import Timing, median_ci, quantile, relative_ci, summarize  # noqa: F401  (public API)

GRAPH_THRESHOLD_MS = (
    0.05  # measured calls under 50 us (kernels of ~20 us plus launch latency): also graph replay
)


# ---------------------------------------------------------------- the protocol


def _default_timer(device: Any) -> Timer:
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
    if dev.type == "cuda":
        return CudaTimer(dev.index if dev.index is not None else torch.cuda.current_device())
    return HostTimer()


def escaped(stream_ms: float, synced_ms: float, sync_gap_ms: float) -> bool:
    """Whether work outlived the call's stream: the device-wide time exceeds the stream time by
    more than an empty call's synchronisation gap plus 5 % (at least 5 us)."""
    return synced_ms - stream_ms > sync_gap_ms + max(0.05 * stream_ms, 0.005)


def _noop(index: int) -> None:
    return None


def time_interleaved(
    fns: dict[str, Callable[[int], Any]],
    *,
    n_input_sets: int,
    warmup_ms: float = 25.0,
    min_warmup_calls: int = 2,
    min_runs: int = 10,
    max_runs: int = 1000,
    max_time_s: float = 10.0,
    target_rel_ci: float = 0.01,
    confidence: float = 0.95,
    flush_l2: bool = True,
    input_set_bytes: int | None = None,
    graph_threshold_ms: float = GRAPH_THRESHOLD_MS,
    device: Any = None,
    timer: Timer | None = None,
    trusted: bool = False,
) -> dict[str, Timing]:
    """Time each fn (called with an input-set index, 0..n_input_sets-1 in turn) interleaved.

    Every round calls every fn once, starting one fn later each round, so drift (clocks,
    temperature, other tenants) hits all of them alike. All fns keep running until every one
    has its median to `target_rel_ci` (half-width of the `confidence` interval over the median),
    or `max_runs` rounds, or `max_time_s` of measuring; the sample counts stay equal. Warm-up
    (first calls: compilation, autotuning, handle creation) is never measured. Functions whose
    median, less the protocol's own overhead (an empty call), is under `graph_threshold_ms`
    also get a CUDA-graph replay time. Exceptions from a fn propagate.
    `trusted` (the judge's baselines, the user's own code): an escape is flagged but the stream time
    stays the figure, because a device-wide figure for a baseline (on a tiny kernel, a noisy sync
    can look like an escape) could only make a candidate look faster than it is; an untrusted
    function that escapes is reported device-wide, which can only make it look slower.
    """
    if not fns:
        return {}
    if n_input_sets < 1:
        raise ValueError("n_input_sets must be >= 1")
    if min_runs < 1 or max_runs < min_runs:
        raise ValueError("need 1 <= min_runs <= max_runs")
    timer = timer if timer is not None else _default_timer(device)
    names = list(fns)
    calls = {name: 0 for name in names}

    def call(name: str) -> tuple[float, float | None]:
        """(stream ms, device-wide ms or None) of one call."""
        index = calls[name] % n_input_sets
        calls[name] += 1
        ms = timer.measure(fns[name], index)
        for _ in range(
            RETAKES
        ):  # a sample that timed the host (busy, e.g. compiling the next candidate)
            if not timer.last_starved:
                break
            ms = timer.measure(fns[name], index)
        return ms, timer.last_synced_ms

    device_ctx = (
        torch.cuda.device(timer.device)
        if isinstance(timer, CudaTimer) and timer.api is REAL_CUDA
        else nullcontext()
    )
    with device_ctx:
        timer.prepare(n_input_sets, input_set_bytes, flush_l2)
        try:
            warmed = {name: 0.0 for name in names}
            rounds = 0
            while rounds < min_warmup_calls or min(warmed.values()) * 1e3 < warmup_ms:
                for name in names:
                    t0 = timer.now()
                    call(name)
                    warmed[name] += timer.now() - t0
                rounds += 1
                if rounds >= max_runs:
                    break

            empty = [(timer.measure(_noop, 0), timer.last_synced_ms) for _ in range(10)]
            overhead = quantile(sorted(e[0] for e in empty), 0.5)
            sync_gap = (
                (quantile(sorted(s for _, s in empty if s is not None), 0.5) - overhead)
                if empty[0][1] is not None
                else 0.0
            )
            samples: dict[str, list[float]] = {name: [] for name in names}
            synced: dict[str, list[float]] = {name: [] for name in names}
            started = timer.now()
            reason = "max_runs"
            for r in range(max_runs):
                k = r % len(names)
                for name in names[k:] + names[:k]:
                    ms, whole_ms = call(name)
                    samples[name].append(ms)
                    if whole_ms is not None:
                        synced[name].append(whole_ms)
                if r + 1 >= min_runs and all(
                    relative_ci(s, confidence) <= target_rel_ci for s in samples.values()
                ):
                    reason = "converged"
                    break
                if timer.now() - started >= max_time_s:
                    reason = "max_time"  # a hard budget: may end before min_runs
                    break

            out = {}
            for name in names:
                t = summarize(
                    samples[name],
                    confidence=confidence,
                    stop_reason=reason,
                    l2_flushed=timer.l2_flushed,
                )
                if synced[name]:
                    whole = summarize(
                        synced[name],
                        confidence=confidence,
                        stop_reason=reason,
                        l2_flushed=timer.l2_flushed,
                    )
                    if escaped(t.median_ms, whole.median_ms, sync_gap):
                        if not trusted:
                            t = whole
                        t.escaped_stream = True
                    t.synced_ms = whole.median_ms
                t.overhead_ms = overhead
                if t.median_ms - overhead < graph_threshold_ms:
                    try:
                        t.graph_ms = timer.graph_ms(fns[name], n_input_sets, t.median_ms)
                    except Exception as e:  # capture refuses syncs, host work, some allocations
                        t.graph_error = f"{type(e).__name__}: {e}"[:500]
                out[name] = t
            return out
        finally:
            timer.close()
