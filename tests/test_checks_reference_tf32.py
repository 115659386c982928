"""A float32 reference whose convolution cuDNN runs in TF32 (PyTorch's default) meets only TF32
bounds itself: its candidates are held to those, and the verdict says why. Matrix products are
not affected (torch.backends.cuda.matmul defaults to IEEE float32)."""

from types import SimpleNamespace

import torch

from kernelevo.checks.opwatch import OpRecorder
from kernelevo.checks.policy import REFERENCE_TF32, precision_check
from kernelevo.measure.precision import convolution_runs_tf32, cudnn_conv_tf32

FAILED_FP32 = "output: 3807 of 260112384 elements outside atol=0.0001, rtol=0.0001"


def facts(reference_tf32: bool, task: object = None) -> SimpleNamespace:
    return SimpleNamespace(
        precision="tf32",
        precision_failure=(FAILED_FP32, {}),
        precision_rel_l2=2.1e-5,
        reference_tf32=reference_tf32,
        task=task,
    )


def test_a_tf32_reference_convolution_sets_tf32_bounds_and_says_so():
    c = precision_check(facts(True), {"precision": []})
    assert c is not None and c.passed
    assert c.message == f"TF32 tolerance (rel. error 2.1e-05): {REFERENCE_TF32}"
    assert "cudnn.allow_tf32, PyTorch's default" in c.message and c.detail["reference_tf32"]


def test_without_it_fp32_bounds_hold_and_the_user_is_told_how_to_accept_tf32():
    c = precision_check(facts(False), {"precision": []})
    assert c is not None and not c.passed
    assert c.message.startswith(FAILED_FP32) and "--allow-tf32" in c.message


def test_a_user_who_accepted_tf32_keeps_tf32_baselines():
    """The user's own acceptance also runs the baselines' matrix products in TF32; a reference
    convolution alone does not (the detail tells the session which)."""
    task = SimpleNamespace(ALLOW_TF32=True)
    c = precision_check(facts(True, task), {"precision": []})
    assert c is not None and c.passed and not c.detail.get("reference_tf32")


def test_cpu_convolutions_and_other_ops_do_not_count():
    conv = torch.nn.Conv2d(3, 4, 3)
    with torch.no_grad(), OpRecorder() as rec:
        torch.relu(conv(torch.randn(1, 3, 8, 8)))
    assert "aten.convolution" in rec.ops and not rec.tf32_convolution
    assert not convolution_runs_tf32("aten.relu", (torch.randn(2),) * 9)


def test_the_cudnn_flag_decides():
    conv = torch.backends.cudnn.conv
    old = conv.fp32_precision
    try:
        conv.fp32_precision = "ieee"
        assert not cudnn_conv_tf32()
        conv.fp32_precision = "tf32"
        assert cudnn_conv_tf32() == torch.backends.cudnn.enabled
    finally:
        conv.fp32_precision = old
