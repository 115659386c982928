"""Model and ModelNew from one seed in one place (kernelevo/checks/weights.py): a constructor that
makes some tensors off the device it was asked for drew them from another generator, so the
module is built on the CPU instead (the GPU case: tests/gpu/test_weights_built_on_gpu.py)."""

import torch
import torch.nn as nn

from kernelevo.checks.weights import built_from_seed

META = torch.device("meta")  # a device context this machine has, standing in for the GPU's


class _Standard(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 4)


class _Legacy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(4, 8))  # made on the CPU whatever the context
        nn.init.kaiming_uniform_(self.weight)


def test_a_module_made_wholly_on_the_device_stays_there():
    module, where = built_from_seed(_Standard, 0, META, gpu=True)
    assert where == "meta" and module.linear.weight.device.type == "meta"


def test_a_module_with_tensors_made_elsewhere_is_built_on_the_cpu_from_the_seed():
    module, where = built_from_seed(_Legacy, 3, META, gpu=True)
    assert where == "cpu" and module.weight.device.type == "cpu"
    torch.manual_seed(3)
    assert torch.equal(module.weight, _Legacy().weight)


def test_without_the_gpu_asked_for_it_is_the_cpu():
    _, where = built_from_seed(_Standard, 0, META, gpu=False)
    assert where == "cpu"
