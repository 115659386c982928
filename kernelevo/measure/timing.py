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

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from kernelevo.measure.timing_stats import Timing, median_ci, quantile, relative_ci, summarize  # noqa: F401  (public API)

# Captured at import, before untrusted code can patch them.
_perf_counter = time.perf_counter
_EventBase = torch.cuda.Event.__mro__[1]
_event_record: Any = getattr(_EventBase, "record", None)  # absent on CPU-only builds
_event_elapsed: Any = getattr(_EventBase, "elapsed_time", None)
_event_synchronize: Any = getattr(_EventBase, "synchronize", None)
_event_query = getattr(_EventBase, "query", None)
_cuda_sleep = getattr(torch.cuda, "_sleep", None)
_Event = torch.cuda.Event
_current_stream = torch.cuda.current_stream
_cuda_synchronize = torch.cuda.synchronize
_c_cuda_synchronize = getattr(torch._C, "_cuda_synchronize", None)

_CAPTURED = {
    "time.perf_counter": (lambda: time.perf_counter, _perf_counter),
    "torch.cuda.Event": (lambda: torch.cuda.Event, _Event),
    "torch.cuda.Event.record": (lambda: torch.cuda.Event.record, torch.cuda.Event.record),
    "torch.cuda.Event.elapsed_time": (
        lambda: torch.cuda.Event.elapsed_time,
        torch.cuda.Event.elapsed_time,
    ),
    "torch.cuda.Event.synchronize": (
        lambda: torch.cuda.Event.synchronize,
        torch.cuda.Event.synchronize,
    ),
    "torch.cuda.synchronize": (lambda: torch.cuda.synchronize, _cuda_synchronize),
    "torch.cuda.current_stream": (lambda: torch.cuda.current_stream, _current_stream),
    "torch._C._cuda_synchronize": (
        lambda: getattr(torch._C, "_cuda_synchronize", None),
        _c_cuda_synchronize,
    ),
}

GRAPH_THRESHOLD_MS = (
    0.05  # measured calls under 50 us (kernels of ~20 us plus launch latency): also graph replay
)
DEFAULT_FLUSH_BYTES = 256 * 1024 * 1024  # what triton.testing.do_bench uses when L2 size is unknown


def tampered() -> list[str]:
    """Names of timing primitives that were replaced since this module was imported."""
    return [name for name, (now, then) in _CAPTURED.items() if now() is not then]


# ---------------------------------------------------------------- L2 flush sizing


def l2_flush_bytes(props: Any) -> int:
    """Bytes to write between calls so nothing of the previous call stays in L2: twice the L2."""
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    return 2 * l2 if l2 > 0 else DEFAULT_FLUSH_BYTES


def flush_needed(l2_bytes: int, n_input_sets: int, input_set_bytes: int | None) -> bool:
    """Whether rotating input sets alone keeps a call's inputs out of L2.

    Between two uses of one set, the other n-1 sets are touched; when they amount to twice the
    L2 the set was evicted. Unknown sizes mean flushing.
    """
    if not input_set_bytes or l2_bytes <= 0:
        return True
    return (n_input_sets - 1) * input_set_bytes < 2 * l2_bytes


# ---------------------------------------------------------------- timers


class Timer(Protocol):
    l2_flushed: bool
    last_synced_ms: float | None  # device-wide time of the last call, where the timer has one
    last_starved: bool  # the last call timed the host's launch latency: take it again

    def prepare(self, n_input_sets: int, input_set_bytes: int | None, flush_l2: bool) -> None: ...
    def measure(self, fn: Callable[[int], Any], index: int) -> float: ...
    def now(self) -> float: ...
    def graph_ms(
        self, fn: Callable[[int], Any], n_input_sets: int, eager_ms: float
    ) -> float | None: ...
    def close(self) -> None: ...


class HostTimer:
    """Host clock: used without CUDA, and in tests with a fake clock."""

    def __init__(self, clock: Callable[[], float] = _perf_counter) -> None:
        self.clock = clock
        self.l2_flushed = False
        self.last_synced_ms: float | None = None
        self.last_starved = False

    def prepare(self, n_input_sets: int, input_set_bytes: int | None, flush_l2: bool) -> None:
        pass

    def measure(self, fn: Callable[[int], Any], index: int) -> float:
        t0 = self.clock()
        fn(index)
        return (self.clock() - t0) * 1e3

    def now(self) -> float:
        return self.clock()

    def graph_ms(
        self, fn: Callable[[int], Any], n_input_sets: int, eager_ms: float
    ) -> float | None:
        return None

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class CudaApi:
    """The CUDA calls the timer makes; tests pass a recording fake to check their order."""

    new_event: Callable[[], Any]
    record: Callable[[Any], None]
    wait_event: Callable[[Any], None]
    elapsed_ms: Callable[[Any, Any], float]
    sync_device: Callable[[], None]
    properties: Callable[[int], Any]
    new_flush_buffer: Callable[[int, int], Any]  # (nbytes, device) -> object with zero_()
    delay: Callable[[int], None] = lambda cycles: None  # a kernel that spins `cycles` clock cycles
    reached: Callable[[Any], bool] = lambda ev: False  # has the device passed this event yet?


def _real_sync_device() -> None:
    if _c_cuda_synchronize is not None:
        _c_cuda_synchronize()  # current device is set by the caller's device context
    else:
        _cuda_synchronize()


REAL_CUDA = CudaApi(
    new_event=lambda: _Event(enable_timing=True),
    record=lambda ev: _event_record(ev, _current_stream()),
    wait_event=lambda ev: _event_synchronize(ev),
    elapsed_ms=lambda a, b: _event_elapsed(a, b),
    sync_device=_real_sync_device,
    properties=lambda d: torch.cuda.get_device_properties(d),
    new_flush_buffer=lambda nbytes, d: torch.empty(
        nbytes // 4, dtype=torch.int32, device=f"cuda:{d}"
    ),
    delay=lambda cycles: _cuda_sleep(cycles) if _cuda_sleep is not None else None,
    reached=lambda ev: bool(_event_query(ev)) if _event_query is not None else False,
)

MIN_DELAY_CYCLES = 20_000  # ~10 us at 2 GHz
RETAKES = 4  # times a starved sample is taken again (the spin doubling each time)
MAX_DELAY_CYCLES = 20_000_000


class CudaTimer:
    def __init__(
        self,
        device: int,
        api: CudaApi = REAL_CUDA,
        clock: Callable[[], float] = _perf_counter,
        graph_replays: int = 20,
    ) -> None:
        self.device = device
        self.api = api
        self.clock = clock
        self.graph_replays = graph_replays
        self.l2_flushed = False
        self._flush: Any = None
        self.last_synced_ms: float | None = None
        self.last_starved = (
            False  # the last sample timed host launch latency (then it is taken again)
        )
        self.delay_cycles = MIN_DELAY_CYCLES

    def prepare(self, n_input_sets: int, input_set_bytes: int | None, flush_l2: bool) -> None:
        props = self.api.properties(self.device)
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        self.l2_flushed = flush_l2 and flush_needed(l2, n_input_sets, input_set_bytes)
        if self.l2_flushed:
            self._flush = self.api.new_flush_buffer(l2_flush_bytes(props), self.device)

    def measure(self, fn: Callable[[int], Any], index: int) -> float:
        """The stream time of one call; the device-wide time is kept in `last_synced_ms`.

        The stream end event is recorded right after the call (as do_bench does); the whole
        device is then synchronised and a second end event recorded, so work hidden on a
        side stream or another thread shows as a gap between the two (see `time_interleaved`).
        """
        api = self.api
        start, end, synced = api.new_event(), api.new_event(), api.new_event()
        if self._flush is not None:
            self._flush.zero_()
        api.delay(
            self.delay_cycles
        )  # the device is busy while the host launches the call's kernels
        api.record(start)
        fn(index)
        api.record(end)
        starved = api.reached(
            start
        )  # the device idled waiting for the host: launch latency was timed
        self.last_starved = starved and self.delay_cycles < MAX_DELAY_CYCLES
        if self.last_starved:
            self.delay_cycles *= 2
        api.sync_device()  # before the last end event: side-stream and other-thread work counts
        api.record(synced)
        api.wait_event(synced)
        self.last_synced_ms = float(api.elapsed_ms(start, synced))
        return float(api.elapsed_ms(start, end))

    def now(self) -> float:
        return self.clock()

    def graph_ms(
        self, fn: Callable[[int], Any], n_input_sets: int, eager_ms: float
    ) -> float | None:
        """Per-call time of back-to-back replays of a CUDA graph holding several calls.

        No flush inside the graph: this is the launch-free, cache-warm time (rotating input sets
        still rotate). Work a candidate hides on a stream outside the capture is not in the
        graph, so use this number beside the eager median, never instead of the correctness run.
        """
        api = self.api
        n_inner = max(1, min(200, int(0.5 / max(eager_ms, 1e-4))))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for i in range(3):
                fn(i % n_input_sets)
        torch.cuda.current_stream().wait_stream(side)
        api.sync_device()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for j in range(n_inner):
                fn(j % n_input_sets)
        graph.replay()
        api.sync_device()
        samples = []
        for _ in range(self.graph_replays):
            start, end = api.new_event(), api.new_event()
            api.delay(self.delay_cycles)
            api.record(start)
            graph.replay()
            api.record(end)
            api.wait_event(end)
            samples.append(float(api.elapsed_ms(start, end)) / n_inner)
        del graph
        return quantile(sorted(samples), 0.5)

    def close(self) -> None:
        self._flush = None


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
) -> dict[str, Timing]:
    """Time each fn (called with an input-set index, 0..n_input_sets-1 in turn) interleaved.

    Every round calls every fn once, starting one fn later each round, so drift (clocks,
    temperature, other tenants) hits all of them alike. All fns keep running until every one
    has its median to `target_rel_ci` (half-width of the `confidence` interval over the median),
    or `max_runs` rounds, or `max_time_s` of measuring; the sample counts stay equal. Warm-up
    (first calls: compilation, autotuning, handle creation) is never measured. Functions whose
    median, less the protocol's own overhead (an empty call), is under `graph_threshold_ms`
    also get a CUDA-graph replay time. Exceptions from a fn propagate.
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
