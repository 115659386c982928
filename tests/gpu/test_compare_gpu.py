"""On the GPU: comparing a passing output waits for the device once. Each float() or item() on a
GPU tensor is a synchronisation; a comparison asked for nine, ~8 ms of a 17 ms comparison per
input set on an H100 (docs/BENCHMARKS.md, the profile of 2026-12-05)."""

import warnings

import pytest
import torch

from kernelevo.checks.compare import compare_outputs

pytestmark = pytest.mark.gpu


def _synchronisations(fn) -> int:
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            fn()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message) for w in seen)


def test_a_passing_comparison_synchronises_once():
    r = torch.randn(512, 512, device="cuda")
    c = r + 1e-7
    result: list = []
    assert _synchronisations(lambda: result.append(compare_outputs(r, c))) == 1
    ok, _msg, detail = result[0]
    assert ok and detail["max_err_index"] and detail["rel_l2"] < 1e-5
