"""Targets whose code runs only on a GPU (kernelevo/targets/gpu_only.py), on real public code.

mamba's Triton-backed RMSNorm (tests/corpus/public/mamba/layernorm_gated.py, unedited) enters
`torch.cuda.device(x.device.index)` before its launch. Its inputs are guessed on the CPU; a guess
that reaches that call has passed the module's own shape checks, so the task is written from it,
checked on a GPU where there is one and "not checked" where there is none, and a search on a
machine without a GPU refuses in one line instead of reporting tracing errors.
"""

from __future__ import annotations

import shutil

import pytest
import torch
from support import ROOT, run_kernelevo

from kernelevo.targets.gpu_only import gpu_only_at

MAMBA = ROOT / "tests" / "corpus" / "public" / "mamba"


def _raised(fn) -> BaseException:  # type: ignore[no-untyped-def]
    try:
        fn()
    except Exception as exc:
        return exc
    raise AssertionError("no error")


def _enter_device_of_a_cpu_tensor() -> None:
    x = torch.ones(2)
    with torch.cuda.device(x.device.index):
        pass


def _shape_check() -> None:
    assert torch.ones(2).shape == (3,), "weight must match"


@pytest.mark.skipif(torch.cuda.is_available(), reason="what a machine without a GPU raises")
def test_an_error_raised_inside_torch_cuda_names_the_users_line():
    where = gpu_only_at(_raised(_enter_device_of_a_cpu_tensor))
    assert where is not None
    assert where.startswith("in _enter_device_of_a_cpu_tensor: `with torch.cuda.device(")
    allocated = gpu_only_at(_raised(lambda: torch.zeros(1, device="cuda")))
    assert allocated is not None and "<lambda>" in allocated


def test_an_error_of_the_code_itself_is_not_a_gpu_need():
    assert gpu_only_at(_raised(_shape_check)) is None
    assert gpu_only_at(_raised(lambda: torch.ones(2) @ torch.ones(3))) is None


@pytest.mark.timeout(600)
def test_a_triton_backed_module_gets_a_task_from_its_signature(tmp_path):
    shutil.copytree(MAMBA, tmp_path / "mamba")
    target = "mamba/layernorm_gated.py::RMSNorm"
    built = run_kernelevo(["task", target, "--timeout", "120"], tmp_path)
    out = built.stdout + built.stderr
    assert built.returncode == 0 and "Traceback" not in out, out
    assert "checked on the CPU only up to the GPU code it reached, in _layer_norm_fwd:" in out
    task = next((tmp_path / ".kernelevo" / "tasks").glob("layernorm_gated__RMSNorm__*.py"))
    text = task.read_text()
    assert "torch.randn((2, 8, 64), dtype=torch.float32)" in text  # fits hidden_size below
    assert "def get_init_inputs():\n    return [64]" in text
    if torch.cuda.is_available():
        assert "check ok" in out, out
        return
    assert "not checked" in out and "can only be checked on a machine with a CUDA GPU" in out
    search = run_kernelevo(["optimize", target, "--iterations", "1"], tmp_path)
    lines = search.stderr.strip().splitlines()
    assert search.returncode == 2 and "Traceback" not in search.stderr
    assert lines[-1].startswith("kernelevo: error: ") and lines[-1].endswith(
        "this machine has no CUDA GPU; search it on a machine with one"
    )
    assert "`with torch.cuda.device(x.device.index):`" in lines[-1]


SCALAR_TO = """import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * eps.to(tl.float32), mask=mask)


class Scale(torch.nn.Module):
    def __init__(self, hidden_size, eps=0.5):
        super().__init__()
        self.hidden_size, self.eps = hidden_size, eps

    def forward(self, x):
        assert x.shape[-1] == self.hidden_size, "hidden size"
        y = torch.empty_like(x)
        _scale_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), self.eps, BLOCK=64)
        return y
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="Triton's CPU interpreter is what fails")
def test_a_kernel_the_cpu_interpreter_cannot_run_counts_as_gpu_code(tmp_path):
    """Liger's RMSNorm kernel calls `.to` on a float argument, which compiles for a GPU but which
    Triton's interpreter passes as a Python float; the guess that reached the launch is kept."""
    (tmp_path / "scale.py").write_text(SCALAR_TO)
    built = run_kernelevo(["task", "scale.py::Scale", "--timeout", "120"], tmp_path)
    out = built.stdout + built.stderr
    assert built.returncode == 0 and "Traceback" not in out, out
    assert "up to the GPU code it reached, in forward: `_scale_kernel[" in out
    assert "InterpreterError" in out and "not checked" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="what the offline search says on a CPU")
@pytest.mark.timeout(600)
def test_the_offline_search_says_why_it_has_nothing_for_a_triton_reference(tmp_path):
    """gpumode's triton_square (unedited) runs in Triton's interpreter, so it is searched; the
    offline sources cannot look into its own kernel, and each says so instead of 'RuntimeError:
    0 active drivers'."""
    shutil.copytree(ROOT / "tests" / "corpus" / "public" / "gpumode", tmp_path / "gpumode")
    run = run_kernelevo(["optimize", "gpumode/triton_square.py::square"], tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "Traceback" not in out, out
    assert "tracing the reference stopped at its own GPU code (in square: `square_kernel[" in out
    assert "offline Inductor extraction: the reference's own GPU code (in square:" in out
