import math
import random
import statistics
import time
from types import SimpleNamespace

import pytest
import torch

from kernelevo.measure import timing
from kernelevo.measure.timing import (
    CudaApi,
    CudaTimer,
    HostTimer,
    flush_needed,
    l2_flush_bytes,
    median_ci,
    quantile,
    relative_ci,
    summarize,
    time_interleaved,
)


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def scripted(clock, durations_ms, log=None, name=None):
    """A fn that 'takes' the next scripted duration on the fake clock; logs (name, index)."""
    it = iter(durations_ms)

    def fn(i):
        if log is not None:
            log.append((name, i))
        clock.t += next(it) / 1e3

    return fn


def constant(clock, ms, log=None, name=None):
    def fn(i):
        if log is not None:
            log.append((name, i))
        clock.t += ms / 1e3

    return fn


# ---------------------------------------------------------------- statistics


def test_summary_of_known_samples():
    xs = [float(v) for v in range(1, 11)]  # 1..10
    t = summarize(random.Random(0).sample(xs, len(xs)))
    assert t.median_ms == pytest.approx(5.5)
    assert t.p10_ms == pytest.approx(1.9)  # numpy.percentile(xs, 10)
    assert t.p90_ms == pytest.approx(9.1)
    assert t.mean_ms == pytest.approx(5.5)
    assert t.stdev_ms == pytest.approx(statistics.stdev(xs))
    assert t.spread == pytest.approx((9.1 - 1.9) / 5.5)
    assert t.n_samples == 10
    assert t.graph_ms is None


def test_quantile_matches_linear_interpolation():
    xs = sorted([3.0, 1.0, 4.0, 1.5, 9.0, 2.6])
    assert quantile(xs, 0.0) == 1.0 and quantile(xs, 1.0) == 9.0
    assert quantile(xs, 0.5) == pytest.approx((2.6 + 3.0) / 2)
    assert quantile(xs, 0.25) == pytest.approx(1.5 + 0.25 * (2.6 - 1.5))


def test_median_ci_uses_order_statistics():
    xs = list(range(100))  # n=100: ranks 50 -+ 1.96*5 -> indices 40 and 59
    assert median_ci(xs) == (40, 59)
    assert median_ci([5.0, 1.0, 3.0]) == (1.0, 5.0)  # too few samples: the whole range


def test_relative_ci_shrinks_with_more_samples():
    rng = random.Random(1)
    few = [1.0 + rng.gauss(0, 0.05) for _ in range(20)]
    many = [1.0 + rng.gauss(0, 0.05) for _ in range(2000)]
    assert relative_ci(many) < relative_ci(few) / 4
    assert relative_ci([2.0] * 10) == 0.0


def test_spread_of_constant_samples_is_zero():
    t = summarize([0.5] * 7)
    assert t.spread == 0.0 and t.stdev_ms == 0.0 and t.rel_ci == 0.0


# ---------------------------------------------------------------- interleaving


def test_round_robin_interleaving_rotates_start_and_input_sets():
    clock, log = FakeClock(), []
    fns = {n: constant(clock, 1.0, log, n) for n in ("ref", "compile", "cand")}
    out = time_interleaved(
        fns,
        n_input_sets=8,
        warmup_ms=0,
        min_warmup_calls=1,
        min_runs=3,
        max_runs=3,
        timer=HostTimer(clock),
    )
    assert list(out) == ["ref", "compile", "cand"]
    names = [n for n, _ in log]
    assert names[:3] == ["ref", "compile", "cand"]  # warm-up round
    assert names[3:] == [
        "ref",
        "compile",
        "cand",
        "compile",
        "cand",
        "ref",
        "cand",
        "ref",
        "compile",
    ]
    for n in fns:  # each fn walks the input sets in order, warm-up included
        assert [i for m, i in log if m == n] == [0, 1, 2, 3]
    assert all(t.n_samples == 3 for t in out.values())


def test_input_set_index_wraps():
    clock, log = FakeClock(), []
    time_interleaved(
        {"a": constant(clock, 1.0, log, "a")},
        n_input_sets=3,
        warmup_ms=0,
        min_warmup_calls=1,
        min_runs=7,
        max_runs=7,
        timer=HostTimer(clock),
    )
    assert [i for _, i in log] == [0, 1, 2, 0, 1, 2, 0, 1]


def test_warmup_is_not_measured():
    clock = FakeClock()
    durations = [5000.0, 2000.0] + [1.0] * 1000  # compile-like first calls
    out = time_interleaved(
        {"a": scripted(clock, durations)},
        n_input_sets=1,
        warmup_ms=0,
        min_warmup_calls=2,
        min_runs=5,
        timer=HostTimer(clock),
    )
    assert out["a"].median_ms == pytest.approx(1.0)
    assert out["a"].p90_ms == pytest.approx(1.0)


def test_warmup_runs_for_warmup_ms():
    clock, log = FakeClock(), []
    time_interleaved(
        {"a": constant(clock, 2.0, log, "a")},
        n_input_sets=1,
        warmup_ms=20,
        min_warmup_calls=1,
        min_runs=5,
        max_runs=100,
        timer=HostTimer(clock),
    )
    assert len(log) == 10 + 5  # 20 ms of 2 ms calls, then 5 measured (constant: converged)


# ---------------------------------------------------------------- adaptive stopping


def test_stable_fns_stop_at_min_runs():
    clock = FakeClock()
    out = time_interleaved(
        {"a": constant(clock, 1.0), "b": constant(clock, 3.0)},
        n_input_sets=1,
        warmup_ms=0,
        min_runs=12,
        max_runs=1000,
        timer=HostTimer(clock),
    )
    assert out["a"].n_samples == out["b"].n_samples == 12
    assert out["a"].stop_reason == "converged"
    assert out["b"].median_ms == pytest.approx(3.0)


def noisy(clock, rel_sd, seed):
    rng = random.Random(seed)

    def fn(i):
        clock.t += max(1e-6, 1.0 + rng.gauss(0, rel_sd)) / 1e3

    return fn


def test_noisy_fn_runs_until_ci_is_below_target():
    clock = FakeClock()
    out = time_interleaved(
        {"quiet": constant(clock, 1.0), "noisy": noisy(clock, 0.05, 2)},
        n_input_sets=1,
        warmup_ms=0,
        min_runs=10,
        max_runs=5000,
        max_time_s=1e9,
        target_rel_ci=0.005,
        timer=HostTimer(clock),
    )
    t = out["noisy"]
    assert t.stop_reason == "converged"
    assert t.rel_ci <= 0.005
    assert 50 < t.n_samples < 5000
    assert out["quiet"].n_samples == t.n_samples  # kept interleaved to the end
    assert t.median_ms == pytest.approx(1.0, rel=0.01)


def test_looser_target_stops_sooner():
    def runs(target):
        clock = FakeClock()
        return time_interleaved(
            {"n": noisy(clock, 0.05, 3)},
            n_input_sets=1,
            warmup_ms=0,
            min_runs=5,
            max_runs=5000,
            max_time_s=1e9,
            target_rel_ci=target,
            timer=HostTimer(clock),
        )["n"].n_samples

    assert runs(0.02) < runs(0.005)


def test_max_runs_caps_unconverged():
    clock = FakeClock()
    out = time_interleaved(
        {"n": noisy(clock, 0.5, 4)},
        n_input_sets=1,
        warmup_ms=0,
        min_runs=5,
        max_runs=40,
        max_time_s=1e9,
        target_rel_ci=1e-6,
        timer=HostTimer(clock),
    )
    assert out["n"].n_samples == 40 and out["n"].stop_reason == "max_runs"


def test_time_budget_stops_early():
    clock = FakeClock()
    out = time_interleaved(
        {"slow": constant(clock, 100.0), "n": noisy(clock, 0.5, 5)},
        n_input_sets=1,
        warmup_ms=0,
        min_runs=50,
        max_runs=1000,
        max_time_s=1.0,
        target_rel_ci=1e-6,
        timer=HostTimer(clock),
    )
    assert out["slow"].stop_reason == "max_time"
    assert out["slow"].n_samples <= 10  # ~1 s of ~0.1 s rounds, even below min_runs


def test_exceptions_propagate():
    def boom(i):
        raise RuntimeError("illegal memory access")

    with pytest.raises(RuntimeError, match="illegal memory access"):
        time_interleaved({"a": boom}, n_input_sets=1, timer=HostTimer(FakeClock()))


def test_bad_arguments():
    with pytest.raises(ValueError):
        time_interleaved({"a": lambda i: None}, n_input_sets=0)
    with pytest.raises(ValueError):
        time_interleaved({"a": lambda i: None}, n_input_sets=1, min_runs=10, max_runs=5)
    assert time_interleaved({}, n_input_sets=1) == {}


def test_real_host_clock_on_cpu():
    x = torch.randn(256, 256)
    y = torch.randn(256, 256)
    out = time_interleaved(
        {"mm": lambda i: x @ y, "add": lambda i: x + y},
        n_input_sets=2,
        warmup_ms=1,
        min_runs=5,
        max_runs=200,
        max_time_s=2.0,
        target_rel_ci=0.05,
        device="cpu",
    )
    for t in out.values():
        assert t.median_ms > 0 and t.p10_ms <= t.median_ms <= t.p90_ms
        assert t.graph_ms is None and not t.l2_flushed
        assert t.n_samples >= 5


def test_small_medians_ask_the_timer_for_graph_time():
    class GraphingTimer(HostTimer):
        def graph_ms(self, fn, n_input_sets, eager_ms):
            return eager_ms / 4

    clock = FakeClock()
    out = time_interleaved(
        {"tiny": constant(clock, 0.005), "big": constant(clock, 1.0)},
        n_input_sets=1,
        warmup_ms=0,
        min_runs=3,
        timer=GraphingTimer(clock),
    )
    assert out["tiny"].graph_ms == pytest.approx(0.005 / 4)
    assert out["big"].graph_ms is None


def test_graph_threshold_discounts_protocol_overhead():
    class SlowProtocol(HostTimer):  # every measurement carries 15 us of sync/event latency
        def measure(self, fn, index):
            return super().measure(fn, index) + 0.015

        def graph_ms(self, fn, n_input_sets, eager_ms):
            return 0.004

    clock = FakeClock()
    out = time_interleaved(
        {"tiny": constant(clock, 0.01), "mid": constant(clock, 0.06)},
        n_input_sets=1,
        warmup_ms=0,
        min_runs=3,
        timer=SlowProtocol(clock),
    )
    assert out["tiny"].median_ms == pytest.approx(0.025) and out[
        "tiny"
    ].overhead_ms == pytest.approx(0.015)
    assert out["tiny"].graph_ms == 0.004  # 25 us read, but 10 us of it is the kernel
    assert out["mid"].graph_ms is None


def test_graph_failure_is_recorded_not_raised():
    class FailingGraphTimer(HostTimer):
        def graph_ms(self, fn, n_input_sets, eager_ms):
            raise RuntimeError("operation not permitted when stream is capturing")

    clock = FakeClock()
    out = time_interleaved(
        {"tiny": constant(clock, 0.005)},
        n_input_sets=1,
        warmup_ms=0,
        min_runs=3,
        timer=FailingGraphTimer(clock),
    )
    assert out["tiny"].graph_ms is None
    assert "capturing" in out["tiny"].graph_error


def test_timer_survives_monkey_patched_clock(monkeypatch):
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    assert "time.perf_counter" in timing.tampered()
    out = time_interleaved(
        {"sleep": lambda i: time.sleep(0.002)},
        n_input_sets=1,
        warmup_ms=0,
        min_runs=3,
        max_runs=3,
        device="cpu",
    )
    assert out["sleep"].median_ms >= 1.5


def test_nothing_tampered_by_default():
    assert timing.tampered() == []


# ---------------------------------------------------------------- L2 flush sizing


def test_flush_buffer_is_twice_l2():
    assert l2_flush_bytes(SimpleNamespace(L2_cache_size=60 * 2**20)) == 120 * 2**20
    assert l2_flush_bytes(SimpleNamespace(L2_cache_size=0)) == timing.DEFAULT_FLUSH_BYTES
    assert l2_flush_bytes(SimpleNamespace()) == timing.DEFAULT_FLUSH_BYTES


def test_rotation_can_replace_the_flush():
    l2 = 60 * 2**20
    assert flush_needed(l2, 1, 10 * 2**30)  # one set: always the same inputs
    assert flush_needed(l2, 8, 4 * 2**20)  # 8 x 4 MiB all fit in L2
    assert not flush_needed(l2, 8, 20 * 2**20)  # 7 other sets x 20 MiB >= 2 x L2
    assert flush_needed(l2, 8, None)  # unknown size: flush


class RecordingCuda:
    """A fake CUDA API that logs the order of the timer's calls."""

    def __init__(self, l2=50 * 2**20, ms=1.25):
        self.log, self.l2, self.ms, self.flush_nbytes = [], l2, ms, None
        self.n = 0

    def api(self):
        def new_event():
            self.n += 1
            return f"ev{self.n}"

        rec = self

        class Buf:
            def zero_(self):
                rec.log.append("flush")

        def new_flush_buffer(nbytes, device):
            self.flush_nbytes = nbytes
            return Buf()

        return CudaApi(
            new_event=new_event,
            record=lambda ev: self.log.append(f"record {ev}"),
            wait_event=lambda ev: self.log.append(f"wait {ev}"),
            elapsed_ms=lambda a, b: self.ms,
            sync_device=lambda: self.log.append("sync"),
            properties=lambda d: SimpleNamespace(L2_cache_size=self.l2),
            new_flush_buffer=new_flush_buffer,
            delay=lambda cycles: self.log.append("delay"),
        )


def test_cuda_protocol_order_flush_start_call_sync_end():
    cuda = RecordingCuda()
    timer = CudaTimer(0, api=cuda.api())
    timer.prepare(n_input_sets=1, input_set_bytes=None, flush_l2=True)
    assert cuda.flush_nbytes == 100 * 2**20 and timer.l2_flushed
    ms = timer.measure(lambda i: cuda.log.append(f"call {i}"), 3)
    assert ms == 1.25
    assert cuda.log == [
        "flush",
        "delay",
        "record ev1",
        "call 3",
        "record ev2",
        "sync",
        "record ev3",
        "wait ev3",
    ]
    assert timer.last_synced_ms == 1.25


def test_cuda_protocol_skips_flush_when_rotation_evicts():
    cuda = RecordingCuda()
    timer = CudaTimer(0, api=cuda.api())
    timer.prepare(n_input_sets=8, input_set_bytes=30 * 2**20, flush_l2=True)
    timer.measure(lambda i: cuda.log.append("call"), 0)
    assert cuda.flush_nbytes is None and not timer.l2_flushed
    assert cuda.log == [
        "delay",
        "record ev1",
        "call",
        "record ev2",
        "sync",
        "record ev3",
        "wait ev3",
    ]


def test_cuda_protocol_without_flush_when_disabled():
    cuda = RecordingCuda()
    timer = CudaTimer(0, api=cuda.api())
    timer.prepare(n_input_sets=1, input_set_bytes=None, flush_l2=False)
    assert cuda.flush_nbytes is None and not timer.l2_flushed


def test_timing_serialises_to_plain_data():
    d = summarize([1.0, 2.0, 3.0]).to_dict()
    assert d["median_ms"] == 2.0 and set(d) >= {
        "median_ms",
        "p10_ms",
        "p90_ms",
        "mean_ms",
        "stdev_ms",
        "spread",
        "n_samples",
        "graph_ms",
    }
    assert all(isinstance(v, (int, float, str, bool, type(None))) for v in d.values())
    assert not math.isnan(d["spread"])


class SimulatedGpu:
    """A device clock: each call adds its stream work and may leave side-stream work running;
    events read the clock, a device synchronisation waits for the side work (plus 10 us)."""

    def __init__(self):
        self.now, self.side_until, self.stamps, self.n = 0.0, 0.0, {}, 0

    def api(self):
        def new_event():
            self.n += 1
            return self.n

        def record(ev):
            self.stamps[ev] = self.now

        def sync():
            self.now = max(self.now, self.side_until) + 0.010

        return CudaApi(
            new_event=new_event,
            record=record,
            wait_event=lambda ev: None,
            elapsed_ms=lambda a, b: self.stamps[b] - self.stamps[a],
            sync_device=sync,
            properties=lambda d: SimpleNamespace(L2_cache_size=0),
            new_flush_buffer=lambda nbytes, d: None,
        )

    def kernel(self, stream_ms, side_ms=0.0):
        def fn(i):
            self.now += stream_ms
            self.side_until = self.now + side_ms

        return fn


def _five_rounds(gpu: SimulatedGpu, fns: dict, **kw) -> dict:
    """Five timed rounds of `fns` on the simulated GPU, no warm-up, no graph replay."""
    return time_interleaved(
        fns,
        n_input_sets=1,
        timer=CudaTimer(0, api=gpu.api()),
        graph_threshold_ms=0,
        min_runs=5,
        max_runs=5,
        warmup_ms=0,
        **kw,
    )


def test_stream_time_reported_when_nothing_escapes():
    gpu = SimulatedGpu()
    out = _five_rounds(gpu, {"k": gpu.kernel(0.200)})["k"]
    assert out.median_ms == pytest.approx(0.200) and not out.escaped_stream
    assert out.synced_ms == pytest.approx(0.210)


def test_side_stream_work_is_timed_device_wide():
    gpu = SimulatedGpu()
    out = _five_rounds(
        gpu, {"honest": gpu.kernel(0.200), "hides": gpu.kernel(0.001, side_ms=0.199)}
    )
    assert not out["honest"].escaped_stream
    assert out["hides"].escaped_stream and out["hides"].median_ms == pytest.approx(0.210)


def test_a_trusted_baseline_keeps_its_stream_time_when_it_seems_to_escape():
    """The judge's baselines: a device-wide figure would make the baseline slower and so the
    candidate's speedup larger; an escape is flagged, the stream time stays."""
    gpu = SimulatedGpu()
    out = _five_rounds(gpu, {"eager": gpu.kernel(0.001, side_ms=0.199)}, trusted=True)["eager"]
    assert out.escaped_stream and out.median_ms == pytest.approx(0.001)
    assert out.synced_ms == pytest.approx(0.210)


def test_spin_before_the_start_grows_until_the_host_launches_in_time():
    """If the device had already passed the start event when the call returned, it sat idle waiting
    for the launch (timed as kernel time): the spin kernel before the start doubles."""
    seen = []
    passed = iter([True, True, False, False])
    api = CudaApi(
        new_event=lambda: object(),
        record=lambda ev: None,
        wait_event=lambda ev: None,
        elapsed_ms=lambda a, b: 1.0,
        sync_device=lambda: None,
        properties=lambda d: SimpleNamespace(L2_cache_size=0),
        new_flush_buffer=lambda n, d: None,
        delay=seen.append,
        reached=lambda ev: next(passed),
    )
    timer = CudaTimer(0, api=api)
    for _ in range(4):
        timer.measure(lambda i: None, 0)
    assert seen == [
        timing.MIN_DELAY_CYCLES,
        2 * timing.MIN_DELAY_CYCLES,
        4 * timing.MIN_DELAY_CYCLES,
        4 * timing.MIN_DELAY_CYCLES,
    ]


def test_a_sample_that_timed_the_host_is_taken_again():
    """A busy host (the compile pool working ahead) can launch after the spin ran out: the device
    then idles inside the timed window. Such a sample is dropped and taken again."""
    state = {"starve": 2, "ran": False, "last": False}

    def fn(i):
        state["ran"] = True

    def reached(ev):  # asked right after each call: was the device already past the start event?
        state["last"] = state["ran"] and state["starve"] > 0
        state["starve"] -= state["last"]
        state["ran"] = False
        return state["last"]

    api = CudaApi(
        new_event=lambda: object(),
        record=lambda ev: None,
        wait_event=lambda ev: None,
        elapsed_ms=lambda a, b: 9.0 if state["last"] else 1.0,
        sync_device=lambda: None,
        properties=lambda d: SimpleNamespace(L2_cache_size=0),
        new_flush_buffer=lambda n, d: None,
        reached=reached,
    )
    timer = CudaTimer(0, api=api)
    out = time_interleaved(
        {"k": fn},
        n_input_sets=1,
        timer=timer,
        warmup_ms=0,
        min_warmup_calls=0,
        min_runs=3,
        max_runs=3,
        graph_threshold_ms=0,
    )["k"]
    assert out.median_ms == 1.0 and out.n_samples == 3
    assert timer.delay_cycles == 4 * timing.MIN_DELAY_CYCLES


def _timed(cand, eager, compile_):
    detail = {
        name: {"median_ms": m, "ci_low_ms": lo, "ci_high_ms": hi}
        for name, (m, lo, hi) in (("candidate", cand), ("eager", eager), ("compile", compile_))
    }
    return {
        "speedup_eager": eager[0] / cand[0],
        "speedup_compile": compile_[0] / cand[0],
        "detail": detail,
    }


def test_the_ship_rule_is_faster_than_eager_and_not_slower_than_torch_compile():
    from kernelevo.measure.timing_stats import ShipDecision, ship_decision

    eager = (0.300, 0.29, 0.31)
    # Beyond the noise below both: shipped, beats torch.compile.
    assert ship_decision(_timed((0.100, 0.099, 0.101), eager, (0.120, 0.118, 0.122))) == (
        ShipDecision(True, "beats", "")
    )
    # Level with torch.compile inside the noise, either side of its median: shipped, matches.
    for compile_ in ((0.101, 0.1005, 0.1015), (0.0995, 0.0990, 0.1000)):
        d = ship_decision(_timed((0.100, 0.099, 0.102), eager, compile_))
        assert d.ship and d.versus_compile == "matches", d
    # Slower than torch.compile beyond the noise: not shipped, and it says so.
    d = ship_decision(_timed((0.100, 0.099, 0.101), eager, (0.090, 0.089, 0.091)))
    assert not d.ship and "slower than torch.compile beyond the timing noise (0.90x" in d.why_not
    # Faster than eager only inside the noise: not shipped, whatever torch.compile does.
    d = ship_decision(_timed((0.100, 0.099, 0.102), (0.101, 0.1005, 0.103), (0.2, 0.19, 0.21)))
    assert not d.ship and "eager PyTorch is within the timing noise" in d.why_not
    d = ship_decision(_timed((0.100, 0.099, 0.101), (0.090, 0.089, 0.091), (0.2, 0.19, 0.21)))
    assert not d.ship and d.why_not == "not faster than eager PyTorch (0.90x)"
    # torch.compile not timed (it failed to compile): eager decides.
    only_eager = _timed((0.100, 0.099, 0.101), eager, (0.2, 0.19, 0.21))
    only_eager["speedup_compile"] = None
    assert ship_decision(only_eager) == ShipDecision(True, "", "")
    assert ship_decision({}) == ShipDecision(False, "", "speed not measured")
