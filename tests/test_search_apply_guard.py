"""The apply guard records the size a kernel was verified at, so `apply` builds the regression
test's module at that size (the SMALL copy on a CPU, the sizes as given on a GPU)."""

from __future__ import annotations

from pathlib import Path

from kernelevo.search.apply_guard import apply_guard
from kernelevo.search.loop import SearchConfig
from kernelevo.search.population import Program
from kernelevo.task import read_task
from kernelevo.verdict import Verdict

TENSOR = {"kind": "tensor", "shape": [64, 64], "dtype": "float32", "device": "cpu"}


def _task(tmp_path: Path, small: bool):
    path = tmp_path / ("small.py" if small else "plain.py")
    path.write_text(
        "import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
        + ("SMALL = {'N': 64}\n" if small else "")
        + "N = 4096\n\n\ndef get_inputs():\n    return [torch.randn(N, N)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    return read_task(path)


def test_the_guard_says_which_size_was_verified(tmp_path):
    best = Program(
        1, "src", "triton", "verified", verdict=Verdict("verified", "", inputs=[[TENSOR]])
    )
    cpu = SearchConfig(device="cpu")
    assert apply_guard(best, cpu, "r", _task(tmp_path, small=True))["size"] == "small"
    assert apply_guard(best, cpu, "r", _task(tmp_path, small=False))["size"] == "default"
    gpu = SearchConfig(device="cuda")
    assert apply_guard(best, gpu, "r", _task(tmp_path, small=True))["size"] == "default"
    forced = SearchConfig(device="cpu", size="default")
    assert apply_guard(best, forced, "r", _task(tmp_path, small=True))["size"] == "default"
