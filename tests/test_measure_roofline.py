from types import SimpleNamespace

import pytest
import torch

from kernelevo.measure.roofline import (
    compute_peak_tflops,
    count_flops,
    io_bytes,
    measure_work,
    plausible,
    roofline,
    widest_float_dtype,
)

H200 = dict(peak_gbps=4200.0, peak_tflops=693.0)


class MatMul(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


def test_matmul_bytes_and_flops():
    m, k, n = 64, 48, 32
    a, b = torch.randn(m, k), torch.randn(k, n)
    w = measure_work(MatMul(), (a, b))
    assert w.bytes == 4 * (m * k + k * n + m * n)
    assert w.flops == 2 * m * n * k
    assert w.dtype == "float32"


def test_linear_counts_its_parameters():
    lin = torch.nn.Linear(32, 16)
    x = torch.randn(8, 32)
    w = measure_work(lin, (x,))
    assert w.bytes == 4 * (8 * 32 + 16 * 32 + 16 + 8 * 16)
    assert w.flops == 2 * 8 * 32 * 16


def test_elementwise_bytes_and_unknown_flops():
    x = torch.randn(1000, 100)
    w = measure_work(lambda t: torch.nn.functional.gelu(t), (x,))
    assert w.bytes == 2 * x.nbytes  # read once, written once
    assert w.flops is None  # not counted: reported unknown, not guessed


def test_half_precision_elementwise():
    x = torch.randn(4096, dtype=torch.bfloat16)
    assert measure_work(lambda t: t * 2, (x,)).bytes == 2 * 4096 * 2


def test_same_tensor_twice_is_read_once():
    x = torch.randn(1000)
    assert measure_work(lambda a, b: a + b, (x, x)).bytes == 2 * x.nbytes


def test_output_view_of_input_is_not_a_write():
    x = torch.randn(1000)
    assert measure_work(lambda t: t.view(10, 100), (x,)).bytes == x.nbytes
    assert measure_work(lambda t: t.relu_(), (x.clone(),)).bytes == x.nbytes


def test_broadcast_input_counts_its_storage_only():
    x = torch.randn(1000)
    w = measure_work(lambda t: t + 1, (x.expand(50, 1000),))
    assert w.bytes == x.nbytes + 50 * x.nbytes


def test_nested_outputs_and_slices():
    big = torch.randn(1 << 16)
    out = (torch.empty(10), {"b": torch.empty(5)})
    assert io_bytes([big[:100]], out) == 4 * (100 + 10 + 5)


def test_count_flops_returns_output():
    a = torch.randn(4, 4)
    flops, out = count_flops(torch.mm, a, a)
    assert flops == 2 * 4 * 4 * 4 and torch.equal(out, a @ a)


def test_widest_float_dtype():
    assert (
        widest_float_dtype((torch.zeros(2, dtype=torch.bfloat16), torch.zeros(2))) == torch.float32
    )
    assert widest_float_dtype((torch.zeros(2, dtype=torch.int64),)) is None


def test_memory_bound_roofline_math():
    r = roofline(2 * 10**9, None, 1.0, **H200)  # 2 GB in 1 ms
    assert r.achieved_gbps == pytest.approx(2000.0)
    assert r.bw_fraction == pytest.approx(2000 / 4200)
    assert r.achieved_tflops is None and r.flop_fraction is None
    assert r.bound == "memory" and not r.over_limit
    assert r.floor_ms == pytest.approx(2e9 / 4200e9 * 1e3)


def test_compute_bound_roofline_math():
    n = 8192
    r = roofline(3 * n * n * 2, 2 * n**3, 2.0, **H200)
    assert r.achieved_tflops == pytest.approx(2 * n**3 / 2e-3 / 1e12)
    assert r.bound == "compute"
    assert r.floor_ms == pytest.approx(2 * n**3 / 693e12 * 1e3)
    assert not r.over_limit


def test_over_limit_flags_faster_than_physics():
    fast = roofline(4 * 10**9, None, 0.5, **H200)  # 8 TB/s
    assert fast.over_limit
    ok, reason = plausible(fast)
    assert (
        not ok
        and "at the measured 4200 GB/s takes at least 0.9524 ms, the candidate took 0.5 ms"
        in reason
    )


def test_within_tolerance_is_not_flagged():
    r = roofline(int(4200e9 * 1.05 * 1e-3), None, 1.0, **H200)  # 5% over the measured peak
    assert not r.over_limit and plausible(r) == (True, "")


def test_reference_flops_never_flag():
    """diag(A) @ B done elementwise needs none of the reference's N^3 FLOPs: the FLOP rate it
    seems to reach says nothing; only the compulsory bytes bound the time."""
    n = 8192
    written = n * n * 4
    r = roofline(
        written + n * 4 + n * n * 4, 2 * n**3, 0.2, **H200, written=written
    )  # 5500 TFLOP/s "achieved"
    assert r.flop_fraction > 5 and not r.over_limit and plausible(r) == (True, "")


def test_reference_over_limit_means_counts_are_not_a_bound():
    ref = roofline(4 * 10**9, None, 0.6, **H200)  # e.g. a gather reading few rows of a big table
    cand = roofline(4 * 10**9, None, 0.3, **H200)
    ok, reason = plausible(cand, ref)
    assert ok and "not a lower bound" in reason


def test_unknown_peaks_never_flag():
    r = roofline(10**12, 10**15, 0.001, peak_gbps=None, peak_tflops=None)
    assert not r.over_limit and r.bw_fraction is None and r.floor_ms is None


def test_compute_peak_by_dtype():
    peaks = SimpleNamespace(bf16_tflops=693.0, fp32_tflops=51.0)
    assert compute_peak_tflops(peaks, torch.bfloat16) == 693.0
    assert compute_peak_tflops(peaks, "float16") == 693.0
    assert compute_peak_tflops(peaks, "float32") == 51.0
    assert compute_peak_tflops(peaks, "float64") is None
    assert compute_peak_tflops(None, "float32") is None


def test_non_positive_time_is_an_error():
    with pytest.raises(ValueError):
        roofline(10, None, 0.0, **H200)


def test_skipping_inputs_is_not_faster_than_physics_but_skipping_outputs_is():
    """A causal softmax may skip the masked half of its input: 126 % of the peak counting every
    input byte is legitimate as long as writing the outputs alone fits under the peak."""
    n = 256 * 2**20  # 256 MiB in, 256 MiB out
    masked = roofline(2 * n, None, 0.1023, **H200, written=n)
    assert masked.bw_fraction > 1.2 and not masked.over_limit
    assert plausible(masked) == (True, "")
    cached = roofline(2 * n, None, 0.03, **H200, written=n)  # not even the outputs could be written
    ok, reason = plausible(cached)
    assert cached.over_limit and not ok and "writing the outputs alone (268435456 bytes)" in reason
    assert "takes at least 0.06391 ms, the candidate took 0.03 ms" in reason


def test_measure_work_counts_the_outputs_written():
    x = torch.randn(64, 32)
    work = measure_work(lambda t: t.softmax(-1), (x,))
    assert work.written == x.numel() * 4 and work.bytes == 2 * x.numel() * 4
