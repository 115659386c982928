"""A float32 output that misses a bound through rounding alone gets a float64 second opinion: a
kernel as accurate as float32 allows passes where the reference itself is ill-conditioned or an
element of a long sum lies near zero, and the bounds still hold where they are not."""

import textwrap
from pathlib import Path

import torch
from support import CANDIDATES

from kernelevo.checks.compare import compare_outputs
from kernelevo.judge import exact_reference
from kernelevo.judge.exact_reference import float64_opinion
from kernelevo.verify import verify_candidate

CONDITIONING = CANDIDATES / "conditioning"

TASK = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def forward(self, x):
            return x * x.mean()


    def get_inputs():
        {inputs}


    def get_init_inputs():
        return []
""")
# a mean ~3e-6 of values ~1: float32 sums of it differ by ~1e-4 relatively, whatever the order
CANCELLING = "x = torch.randn(64, 256)\n    return [x - x.mean() + 3e-6]"
POSITIVE = "return [torch.rand(64, 256) + 0.5]"


def _task(tmp_path: Path, inputs: str) -> Path:
    path = tmp_path / "mean_scale.py"
    path.write_text(TASK.format(inputs=inputs))
    return path


def _match(verdict) -> dict:
    return next(c for c in verdict.checks if c.name.startswith("match[")).detail


def test_another_summation_order_passes_where_the_reference_cancels(tmp_path, evaluator):
    task = _task(tmp_path, CANCELLING)
    v = verify_candidate(
        task, CONDITIONING / "blockwise_mean_scale.py", evaluator=evaluator, device="cpu"
    )
    assert v.status == "verified", v.reason
    opinions = [c for c in v.checks if "float64" in c.detail]
    assert opinions, "no input set needed the float64 run: the task does not cancel enough"
    for c in opinions:
        f = c.detail["float64"]
        assert c.detail["rel_l2"] > 1e-5 and f["candidate"] <= max(
            2 * f["reference"], f["input_sensitivity"]
        )
        assert "to a float64 run of it" in c.message


def test_a_kernel_off_by_5e_5_still_fails_where_the_reference_is_well_conditioned(
    tmp_path, evaluator
):
    task = _task(tmp_path, POSITIVE)
    good = verify_candidate(
        task, CONDITIONING / "blockwise_mean_scale.py", evaluator=evaluator, device="cpu"
    )
    assert good.status == "verified", good.reason
    scaled = tmp_path / "blockwise_mean_scale_off.py"  # the same kernel, 5e-5 too far
    text = (CONDITIONING / "blockwise_mean_scale.py").read_text()
    scaled.write_text(text.replace("SCALE = 1.0\n", "SCALE = 1.0 + 5e-5\n"))
    off = verify_candidate(task, scaled, evaluator=evaluator, device="cpu")
    assert off.status == "incorrect" and "relative L2 error" in off.reason, off.reason
    assert "against a float64 run of the reference it is " in off.reason  # the figures, said


class _Float32Only(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ torch.ones(x.shape[-1], 2, dtype=torch.float32)


def test_no_opinion_when_the_forward_needs_float32_or_the_task_is_large(monkeypatch):
    x = torch.randn(4, 8)
    ref = _Float32Only()(x)
    off = ref * (1 + 5e-5)
    assert float64_opinion(_Float32Only(), [x], ref, off) is None
    linear = torch.nn.Linear(8, 2)
    out = linear(x).detach()
    assert float64_opinion(linear, [x], out, out * (1 + 5e-5)) is not None
    monkeypatch.setattr(exact_reference, "MAX_BYTES", 64)
    assert float64_opinion(linear, [x], out, out * (1 + 5e-5)) is None


MATVEC = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def forward(self, a, x):
            return torch.matmul(a, x)


    def get_inputs():
        a, x = torch.randn({rows}, {k}), torch.randn({k}, 1)
        a[:8] -= (a[:8] @ x) / (x * x).sum() * x.T  # eight rows whose products sum to ~0
        return [a, x]


    def get_init_inputs():
        return []
""")


def test_elements_near_zero_of_a_long_sum_pass_within_float32_rounding(tmp_path, evaluator):
    task = tmp_path / "matvec.py"
    task.write_text(MATVEC.format(rows=16, k=65536))
    v = verify_candidate(
        task, CONDITIONING / "blockwise_matvec.py", evaluator=evaluator, device="cpu"
    )
    assert v.status == "verified", v.reason
    judged = [c for c in v.checks if "outside" in c.detail.get("float64", {})]
    assert judged, "no input set missed atol/rtol: the rows do not cancel enough"
    for c in judged:
        assert c.detail["mismatches"] > 0 and c.detail["float64"]["outside"] == 0
        assert "within float32 rounding of the float64 run" in c.message


def test_one_element_off_beyond_rounding_fails_though_the_l2_bound_holds(tmp_path, evaluator):
    task = tmp_path / "matvec.py"
    task.write_text(MATVEC.format(rows=64, k=1024))
    off = tmp_path / "blockwise_matvec_off.py"  # row 3, a sum of 1024 terms near zero, off by 1e-3
    text = (CONDITIONING / "blockwise_matvec.py").read_text()
    off.write_text(text.replace("OFF_ROW, OFF_BY = -1, 4e-3", "OFF_ROW, OFF_BY = 3, 1e-3"))
    v = verify_candidate(task, off, evaluator=evaluator, device="cpu")
    assert v.status == "incorrect", v.reason
    assert "off by more than float32 rounding allows" in v.reason, v.reason
    assert "at [3, 0]" in v.reason


class _CumSum(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=1)


def _sequential_scan(x: torch.Tensor) -> torch.Tensor:
    """One float32 running sum per row, as a thread-per-row kernel computes it."""
    out, acc = torch.empty_like(x), torch.zeros(x.shape[0])
    for j in range(x.shape[1]):
        acc = acc + x[:, j]
        out[:, j] = acc
    return out


def test_a_sequential_scan_rounding_more_than_the_reference_passes():
    needed = 0
    for seed in range(8):
        torch.manual_seed(seed)
        x = torch.randn(128, 4000)
        ref, scan = _CumSum()(x), _sequential_scan(x)
        if compare_outputs(ref, scan)[0]:
            continue
        needed += 1
        opinion = float64_opinion(_CumSum(), [x], ref, scan)
        assert opinion is not None and opinion[0], opinion
    assert needed, "no seed's scan missed atol/rtol: nothing was judged"


class _MatVec(torch.nn.Module):
    def forward(self, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return a @ x


def test_lower_precision_is_no_rounding_and_gets_no_opinion():
    torch.manual_seed(0)
    a, x = torch.randn(16, 65536), torch.randn(65536, 1)
    ref = _MatVec()(a, x)
    low = a.to(torch.bfloat16).float() @ x  # misses the relative-L2 bound: not rounding
    assert float64_opinion(_MatVec(), [a, x], ref, low) is None
