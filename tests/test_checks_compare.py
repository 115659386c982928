import torch

from kernelevo.checks.compare import compare_outputs, tolerance_for


def test_exact_match_and_small_error():
    r = torch.randn(64, 64)
    assert compare_outputs(r, r.clone())[0]
    assert compare_outputs(r, r + 1e-6)[0]


def test_fp16_precision_drift_fails_fp32_l2_bound():
    r = torch.randn(256, 256)
    ok, _msg, detail = compare_outputs(r, r.half().float())
    assert not ok and detail["rel_l2"] > 1e-5


def test_nan_where_reference_finite():
    r = torch.randn(10)
    c = r.clone()
    c[3] = float("nan")
    ok, msg, detail = compare_outputs(r, c)
    assert not ok and "NaN" in msg and detail["first_index"] == [3]


def test_shape_dtype_and_subclass():
    r = torch.randn(4, 4)
    assert "shape" in compare_outputs(r, torch.randn(4, 5))[1]
    assert "dtype" in compare_outputs(r, r.double())[1]

    class Sub(torch.Tensor):
        pass

    assert "plain torch.Tensor" in compare_outputs(r, r.clone().as_subclass(Sub))[1]


def test_mismatch_location_reported():
    r = torch.zeros(8, 8) + 1
    c = r.clone()
    c[2, 5] = 3.0
    ok, _msg, detail = compare_outputs(r, c)
    assert not ok and detail["max_err_index"] == [2, 5] and detail["mismatches"] == 1


def test_integer_exact_and_tolerance_hint():
    assert tolerance_for(torch.int64) is None
    assert not compare_outputs(torch.tensor([1, 2]), torch.tensor([1, 3]))[0]
    assert tolerance_for(torch.float32, {"atol": 1e-2})["atol"] == 1e-2
    assert tolerance_for(torch.float32, {"float32": {"rtol": 5e-3}})["rtol"] == 5e-3


def test_the_largest_error_is_located_and_its_values_given():
    r = torch.randn(3, 4, 5, dtype=torch.float32)
    c = r.clone()
    c[1, 2, 3] += 5e-5
    c[2, 0, 1] += 2e-5
    ok, _msg, detail = compare_outputs(r, c)
    assert ok and detail["max_err_index"] == [1, 2, 3] and detail["mismatches"] == 0
    assert detail["expected_at_max"] == float(r[1, 2, 3]) and detail["got_at_max"] == float(
        c[1, 2, 3]
    )
    diff = (c.double() - r.double()).norm() / r.double().norm()
    assert abs(detail["rel_l2"] - float(diff)) < 1e-12


def test_a_reference_inf_the_candidate_loses_is_said():
    r = torch.tensor([1.0, float("inf"), 2.0])
    ok, msg, detail = compare_outputs(r, torch.tensor([1.0, 5.0, 2.0]))
    assert (
        not ok
        and "non-finite reference values not reproduced" in msg
        and detail["first_index"] == [1]
    )
    assert compare_outputs(r, r.clone())[0]


def test_an_all_zero_reference_is_judged_element_wise():
    """A product of many normal values underflows to an all-zero float32 reference; a candidate
    off by a denormal everywhere is within atol, and no relative error exists to bound."""
    from kernelevo.judge.outputs import compare_any_size

    r = torch.zeros(16, 256)
    c = torch.full_like(r, 1.4e-45)
    ok, msg, detail = compare_outputs(r, c)
    assert ok, msg
    assert detail["rel_l2"] is None and detail["mismatches"] == 0
    ok, msg, detail = compare_any_size(r, c, slice_elements=256)
    assert ok, msg
    ok, msg, _ = compare_outputs(r, torch.full_like(r, 1.0))
    assert not ok and "the reference is all zeros" in msg
    assert compare_outputs(r, r.clone())[2]["rel_l2"] == 0.0
