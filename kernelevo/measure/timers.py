"""Timers that take one sample of a call: the host clock, and CUDA events with an L2 flush.

The CUDA timer's order of calls (flush, spin, start event, call, end event, device sync) is
what timing.py's docstring describes; its CUDA calls go through `CudaApi`, so tests pass a
recording fake. Both use the primitives captured in timing_primitives.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from kernelevo.measure.timing_primitives import (
    _c_cuda_synchronize,
    _cuda_sleep,
    _cuda_synchronize,
    _current_stream,
    _Event,
    _event_elapsed,
    _event_query,
    _event_record,
    _event_synchronize,
    _perf_counter,
)
from kernelevo.measure.timing_stats import quantile

DEFAULT_FLUSH_BYTES = 256 * 1024 * 1024  # what triton.testing.do_bench uses when L2 size is unknown


# ---------------------------------------------------------------- L2 flush sizing


def l2_flush_bytes(props: Any) -> int:
    """Bytes to write between calls so nothing of the previous call stays in L2: twice the L2."""
    return _evicting_bytes(_l2_size(props))


def _l2_size(props: Any) -> int:
    return int(getattr(props, "L2_cache_size", 0) or 0)


def _evicting_bytes(l2_bytes: int) -> int:
    """Bytes touched between two uses of one buffer that evict it: twice the L2 (do_bench's
    figure where the size is unknown)."""
    return 2 * l2_bytes if l2_bytes > 0 else DEFAULT_FLUSH_BYTES


def flush_needed(l2_bytes: int, n_input_sets: int, input_set_bytes: int | None) -> bool:
    """Whether rotating input sets alone keeps a call's inputs out of L2.

    Between two uses of one set, the other n-1 sets are touched; when they amount to twice the
    L2 the set was evicted. Unknown sizes mean flushing.
    """
    if not input_set_bytes or l2_bytes <= 0:
        return True
    return (n_input_sets - 1) * input_set_bytes < 2 * l2_bytes


def device_l2_bytes(device: Any) -> int:
    """The L2 size of a CUDA device (0 for any other)."""
    if getattr(device, "type", None) != "cuda":
        return 0
    return _l2_size(torch.cuda.get_device_properties(device))


def rotation_set_count(l2_bytes: int, input_set_bytes: int) -> int:
    """The fewest input sets whose rotation keeps each call's inputs out of L2 (see flush_needed):
    more sets cost memory and buy nothing. A 6 GiB set needs one other; timing five of them held
    60 GiB of a 77.5 GiB judge on the H200 (KernelBench L1_19-24)."""
    return 1 + -(-_evicting_bytes(l2_bytes) // max(input_set_bytes, 1))


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
