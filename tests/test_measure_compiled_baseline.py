import pytest
import torch

from kernelevo.measure.compiled_baseline import compile_baseline, first_call


class Gelu(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x * 2 + 1)


class Broken(torch.nn.Module):
    def forward(self, x):
        return x @ torch.ones(3, 5)  # shape mismatch for (4, 4) inputs


def test_unknown_mode_is_an_error_not_an_exception():
    fn, err = compile_baseline(Gelu(), "fastest")
    assert fn is None and "fastest" in err


def test_compiled_baseline_matches_eager():
    x = torch.randn(4, 4)
    fn, err = compile_baseline(Gelu(), "default", backend="eager")
    assert err is None
    out, err, seconds = first_call(fn, (x,))
    assert err is None and seconds > 0
    torch.testing.assert_close(out, Gelu()(x))


def test_first_call_reports_errors():
    fn, err = compile_baseline(Broken(), "default", backend="eager")
    assert err is None  # torch.compile is lazy: errors appear on the first call
    out, err, _ = first_call(fn, (torch.randn(4, 4),))
    assert out is None and "Error" in err and "\n" not in err


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["default", "max-autotune"])
def test_inductor_baseline_on_this_machine(mode):
    x = torch.randn(64, 64)
    fn, err = compile_baseline(Gelu(), mode)
    assert err is None
    out, err, _ = first_call(fn, (x,))
    if err is not None:
        pytest.skip(f"inductor unavailable here: {err}")
    torch.testing.assert_close(out, Gelu()(x))
