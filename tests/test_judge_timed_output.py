"""The judge's check of the back-to-back timed calls' outputs (kernelevo/judge/process.py): the
reference runs once per verdict on the timing set, and every later output is still compared."""

from __future__ import annotations

from pathlib import Path

import torch

from kernelevo.judge import requests as rq
from kernelevo.judge.process import Judge
from kernelevo.task import read_task
from kernelevo.tensor_channel import export_tensor

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _judge_with_timing_sets(folder: Path) -> Judge:
    path = EXAMPLES / "softmax.py"
    common = {
        "task_path": str(path),
        "task_hash": read_task(path).hash,
        "size": "small",
        "device": "cpu",
    }
    j = Judge()
    j.handle({"op": "probe", **common, "seed": 3})
    j.handle({"op": "begin", **common, "seed": 3, "exchange": str(folder), "via": "ipc"})
    j.handle({"op": "timing_sets", "seed": 3})
    return j


def _check(j: Judge, out: torch.Tensor, folder: Path, tag: str) -> bool:
    desc = export_tensor(out, str(folder), f"out-{tag}-0", "ipc")
    reply = j.op_check_timed_output(rq.CheckTimedOutput(outputs=[{"tensor": desc, "plain": True}]))
    return all(c.passed for c in reply.checks)


def test_the_reference_runs_once_and_each_timed_output_is_still_compared(tmp_path):
    j = _judge_with_timing_sets(tmp_path)
    assert j.ref is not None
    right = j.ref.forward(j.timing_sets[0]).clone()
    calls = []
    forward = j.ref.forward
    j.ref.forward = lambda args: calls.append(1) or forward(args)  # type: ignore[method-assign]
    assert _check(j, right, tmp_path, "pilot")
    assert _check(j, right.clone(), tmp_path, "first")
    assert not _check(j, torch.zeros_like(right), tmp_path, "second")
    assert _check(j, right.clone(), tmp_path, "third")
    assert len(calls) == 1, "the reference ran again for the same timing set"
    j.handle({"op": "timing_sets", "seed": 4})
    assert _check(j, forward(j.timing_sets[0]).clone(), tmp_path, "next")
    assert len(calls) == 2, "a new timing set was checked against the old reference output"
    j.handle({"op": "end"})
