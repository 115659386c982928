"""How a candidate's failure is told: a CUDA-only candidate judged on a machine without a GPU
is `unverified` (it cannot run here), not a `runtime_error` of the kernel."""

from pathlib import Path

import pytest
import torch
from support import CANDIDATES, EXAMPLES

from kernelevo.runner.candidate_failure import needs_a_gpu
from kernelevo.verify import verify_candidate


def test_only_cpu_judging_excuses_a_missing_gpu():
    no_cuda = AssertionError("Torch not compiled with CUDA enabled")
    assert needs_a_gpu(no_cuda, torch.device("cpu"))
    assert not needs_a_gpu(no_cuda, torch.device("cuda"))
    assert not needs_a_gpu(IndexError("index 9 is out of bounds"), torch.device("cpu"))


def test_a_candidate_that_allocates_on_cuda_is_not_run_on_the_cpu(tmp_path: Path, evaluator):
    if evaluator.device != "cpu":
        pytest.skip("judged on a GPU, the candidate runs")
    src = (CANDIDATES / "softmax" / "triton_ok.py").read_text()
    # as published KernelBench kernels often do: the output allocated on "cuda" by name
    cand = tmp_path / "cuda_by_name.py"
    cand.write_text(
        src.replace("out = torch.empty_like(x2)", 'out = torch.empty(x2.shape, device="cuda")')
    )
    v = verify_candidate(EXAMPLES / "softmax.py", cand, evaluator=evaluator, device="cpu")
    assert v.status == "unverified", (v.status, v.reason)
    assert v.reason.startswith("not run: it needs a GPU, none here (candidate:"), v.reason
    assert "Torch not compiled with CUDA enabled" in v.reason
