"""Library call + fused epilogue (or epilogue and trailing reduction) on real KernelBench Level 2
tasks (bench/kernelbench, unedited): the candidate keeps the GEMM/convolution call and computes
the ops after it in one Triton kernel that agrees with the reference under the interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevo.offline.graph_trace import trace
from kernelevo.offline.match import generate_all, instantiate_report

REPO = Path(__file__).resolve().parents[1]
LEVEL2 = REPO / "bench" / "kernelbench" / "level2"


def small_copy(tmp_path: Path, name: str, small: str) -> Path:
    """The unedited task with SMALL sizes appended, so the interpreter can run it."""
    path = tmp_path / f"{name}.py"
    path.write_text((LEVEL2 / f"{name}.py").read_text() + f"\n\nSMALL = {small}\n")
    return path


CASES = {
    # convolution, then relu and a (C, 1, 1) bias broadcast over the batch and the image
    "1_Conv2D_ReLU_BiasAdd": '{"batch_size": 2, "in_channels": 3, "out_channels": 5, "height": 9, "width": 9, '
    '"bias_shape": (5, 1, 1)}',
    # transposed convolution, then a bias of shape (C, 1, 1) and tanh
    "5_ConvTranspose2d_Subtract_Tanh": '{"batch_size": 2, "in_channels": 3, "out_channels": 4, "height": 5, '
    '"width": 5, "bias_shape": (4, 1, 1)}',
    # addmm, then mish twice (softplus and tanh in the kernel)
    "29_Matmul_Mish_Mish": '{"batch_size": 3, "in_features": 16, "out_features": 24}',
    # addmm, the result detached and cloned, then a residual add of itself
    "40_Matmul_Scaling_ResidualAdd": '{"batch_size": 3, "in_features": 16, "out_features": 24}',
}
REDUCTION_CASES = {
    # addmm, sigmoid, then a sum over the row (keepdim)
    "56_Matmul_Sigmoid_Sum": '{"batch_size": 3, "input_size": 20, "hidden_size": 1500}',
    # convolution, GELU, a mean over the image, two squeezes
    "67_Conv2d_GELU_GlobalAvgPool": '{"batch_size": 2, "in_channels": 3, "out_channels": 4, "height": 7, '
    '"width": 9, "kernel_size": 3}',
    # addmm, scale, x + x, clamp, logsumexp over the row, then x * mish(x) on the reduced value
    "22_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish": '{"batch_size": 3, "input_size": 16, "hidden_size": 1100}',
    # mm with a permuted weight, divide, sum over the row, scale
    "14_Gemm_Divide_Sum_Scaling": '{"batch_size": 3, "input_size": 16, "hidden_size": 24}',
}


def test_matched_on_conv_and_gemm_chains_only() -> None:
    conv = generate_all(trace(str(LEVEL2 / "54_Conv2d_Multiply_LeakyReLU_GELU.py"), "default"))
    assert conv.matched == ["library_epilogue"], conv.rejected
    source = dict(conv.candidates)["library_epilogue"]
    assert "torch.convolution(" in source and source.count("@triton.jit") == 1
    # the (C, 1, 1) multiplier is read through its broadcast strides, not materialised
    assert "torch.broadcast_to(self.get_parameter('multiplier'), y.shape)" in source
    reduction = generate_all(trace(str(LEVEL2 / "67_Conv2d_GELU_GlobalAvgPool.py"), "default"))
    assert "library_epilogue" not in reduction.matched  # a mean over the image is not elementwise
    plain = generate_all(
        trace(str(REPO / "bench" / "kernelbench" / "level1" / "87_conv_pointwise_2D.py"), "default")
    )
    assert "library_epilogue" not in plain.matched  # nothing after the library call to fuse


@pytest.mark.parametrize("name", sorted(CASES) + sorted(REDUCTION_CASES))
def test_candidate_agrees_with_the_reference(tmp_path: Path, name: str) -> None:
    template = "library_epilogue" if name in CASES else "library_reduction"
    report = instantiate_report(
        small_copy(tmp_path, name, {**CASES, **REDUCTION_CASES}[name]), check=True
    )
    assert template in report.matched
    assert template in dict(report.candidates), report.rejected


def test_reductions_after_the_library_call_only_over_trailing_dimensions() -> None:
    # a min over the channels (dimension 1 of 4) is not contiguous in the convolution's output
    assert (
        "library_reduction"
        not in generate_all(trace(str(LEVEL2 / "25_Conv2d_Min_Tanh_Tanh.py"), "default")).matched
    )
    source = dict(
        generate_all(trace(str(LEVEL2 / "56_Matmul_Sigmoid_Sum.py"), "default")).candidates
    )["library_reduction"]
    assert (
        "torch.addmm(" in source
        and source.count("@triton.jit") == 1
        and "for c0 in range(0, n_cols, BLOCK)" in source
    )
