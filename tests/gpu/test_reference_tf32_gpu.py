"""On the GPU: which float32 convolutions cuDNN runs in TF32 by default (the reference then
meets only TF32 bounds), and which go to PyTorch's own float32 kernels."""

import pytest
import torch

from kernelevo.checks.opwatch import OpRecorder

pytestmark = pytest.mark.gpu


def recorded(module: torch.nn.Module, x: torch.Tensor) -> bool:
    module = module.cuda()
    with torch.no_grad(), OpRecorder() as rec:
        module(x.cuda())
    return rec.tf32_convolution


def test_a_default_float32_cudnn_convolution_runs_in_tf32():
    assert recorded(torch.nn.Conv2d(16, 32, 3), torch.randn(2, 16, 32, 32))
    assert recorded(torch.nn.ConvTranspose2d(16, 8, 3), torch.randn(2, 16, 32, 32))


def test_with_tf32_switched_off_or_in_float64_it_does_not():
    conv = getattr(torch.backends.cudnn, "conv", None)
    owner, attr, off = (
        (conv, "fp32_precision", "ieee")
        if hasattr(conv, "fp32_precision")
        else (torch.backends.cudnn, "allow_tf32", False)
    )
    old = getattr(owner, attr)
    try:
        setattr(owner, attr, off)
        assert not recorded(torch.nn.Conv2d(16, 32, 3), torch.randn(2, 16, 32, 32))
    finally:
        setattr(owner, attr, old)
    assert not recorded(torch.nn.Conv2d(16, 32, 3).double(), torch.randn(2, 16, 32, 32).double())
