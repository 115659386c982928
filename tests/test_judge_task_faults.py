"""A broken task is the task's problem: found before any candidate runs, said with what to fix.

The reference runs alone in the judge process first; its hangs, crashes, exits,
nondeterminism, state kept between calls and bad get_inputs() are TaskErrors (exit code 2
in the CLI), never a candidate's failure. Memory needs are estimated on meta tensors, so
a task far too large is refused up front, in seconds, without allocating anything.
"""

import time

import pytest
from support import CANDIDATES

from kernelevo.task import TaskError
from kernelevo.verify import verify_candidate

GOOD = CANDIDATES / "softmax" / "triton_ok.py"

TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
{init}
    def forward(self, x):
{forward}


def get_inputs():
{inputs}


def get_init_inputs():
    return []
"""

SOFTMAX = "        return torch.softmax(x, dim=-1)"
INPUTS = "    return [torch.randn(8, 64)]"

FAULTS = {
    "hangs": ("", "        while True:\n            pass", INPUTS, "did not finish"),
    "crashes": ("", "        import os\n        os._exit(3)", INPUTS, "did not finish"),
    "exits": ("", "        raise SystemExit(1)", INPUTS, "SystemExit"),
    "raises": ("", "        return x @ x", INPUTS, "Model.forward raised"),
    "nondeterministic": (
        "",
        "        return torch.softmax(x + torch.rand_like(x), dim=-1)",
        INPUTS,
        "nondeterministic",
    ),
    "keeps_state": (
        "        self.calls = 0\n",
        "        self.calls += 1\n        return x * self.calls",
        INPUTS,
        "keeps state",
    ),
    "modifies_inputs": (
        "",
        "        x.mul_(2)\n        return x.clone()",
        INPUTS,
        "modifies its inputs",
    ),
    "zero_inputs": ("", SOFTMAX, "    return [torch.zeros(8, 64)]", "all-zero"),
    "no_tensors": ("", SOFTMAX, "    return [None]", "no tensors"),
    "nan_inputs": ("", SOFTMAX, "    return [torch.full((8, 64), float('nan'))]", "NaN"),
    "returns_nothing": ("", "        x.sum()", INPUTS, "not a tensor"),
}


def _task(tmp_path, name, init, forward, inputs):
    path = tmp_path / f"{name}.py"
    path.write_text(TASK.format(init=init, forward=forward, inputs=inputs))
    return path


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_task_fault_is_the_tasks(name, tmp_path, evaluator):
    init, forward, inputs, says = FAULTS[name]
    task = _task(tmp_path, name, init, forward, inputs)
    with pytest.raises(TaskError) as err:
        verify_candidate(
            task, GOOD, evaluator=evaluator, device=evaluator.device, timeout=10, use_cache=False
        )
    assert says.lower() in str(err.value).lower(), str(err.value)
    assert str(task) in str(err.value)
    # a reference stopped at the time limit on the CPU may be slow, not hung: the task is not
    # blamed outright; a crash is
    slow = name == "hangs" and evaluator.device == "cpu"
    assert ("too slow at these sizes on the cpu" in str(err.value)) == slow, str(err.value)
    if says == "did not finish":
        assert ("fix the task" in str(err.value)) == (not slow), str(err.value)
    # the evaluator is usable for the next, healthy task
    v = verify_candidate(
        _task(tmp_path, "healthy", "", SOFTMAX, INPUTS),
        GOOD,
        evaluator=evaluator,
        device=evaluator.device,
        use_cache=False,
    )
    assert v.status == "verified", v.reason


def test_a_task_of_a_trillion_elements_is_refused_up_front(tmp_path, evaluator):
    task = _task(tmp_path, "huge", "", SOFTMAX, "    return [torch.randn(1000000, 1000000)]")
    t0 = time.monotonic()
    with pytest.raises(TaskError) as err:
        verify_candidate(
            task, GOOD, evaluator=evaluator, device=evaluator.device, timeout=60, use_cache=False
        )
    message = str(err.value)
    assert "needs ~" in message and "GiB" in message and "smaller" in message, message
    assert time.monotonic() - t0 < 30


def test_memory_need_is_estimated_on_meta_tensors(tmp_path):
    import torch

    from kernelevo.judge.reference import Reference

    task = _task(
        tmp_path,
        "sized",
        "        self.w = nn.Parameter(torch.randn(1024, 1024))\n",
        "        return x @ self.w",
        "    return [torch.randn(4096, 1024)]",
    )
    need = Reference(str(task), "default", torch.device("cpu")).need()
    assert (
        need.inputs == 4096 * 1024 * 4
        and need.outputs == 4096 * 1024 * 4
        and need.weights == 1024 * 1024 * 4
    )
