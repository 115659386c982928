"""The plan worker (server/plan_worker.py) answers one typed request frame per process: a frame
that is no plan request is answered with its error, and a real request is planned in a child that
the server reaches only through the framing."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import subprocess

import pytest
from kernelevo_server.plan_worker import PLAN, GuessInputs, answer
from kernelevo_server.planned_edit import PLAN_COMMAND, run_plan_worker

from kernelevo.worker import protocol

MODEL = "import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"


@pytest.mark.parametrize(
    ("frame", "said"),
    [
        ({"op": "plan_apply", "user_file": "m.py", "target_id": "t"}, "candidate_path"),
        ({"op": "guess_inputs", "user_file": "m.py", "target_id": "t", "text": "", "x": 1}, "x"),
        ({"op": "apply_now"}, "unknown op 'apply_now'"),
        (None, "unknown op None"),
    ],
)
def test_a_frame_that_is_no_plan_request_is_answered_with_its_error(frame, said):
    reply = answer(frame)
    assert reply["error"].startswith("not a plan request") and said in reply["error"], reply


def test_a_request_survives_the_wire_as_the_same_record():
    sent = GuessInputs("m.py", "m.py::Model", MODEL)
    assert PLAN.parse(protocol.read(io.BytesIO(protocol.encode(sent.wire())))) == sent


def test_the_child_answers_a_guess_and_refuses_bytes_that_are_no_frame(tmp_path):
    user_file = tmp_path / "m.py"
    user_file.write_text(MODEL)
    reply = asyncio.run(run_plan_worker(GuessInputs(str(user_file), "no such target", MODEL)))
    assert reply["error"] == f"no target no such target in {user_file}"
    raw = subprocess.run(
        PLAN_COMMAND, input=b'{"op": "guess_inputs"}', capture_output=True, timeout=120, check=True
    )
    assert "not a plan request" in protocol.read(io.BytesIO(raw.stdout))["error"]


def test_a_plan_crosses_as_its_record_and_a_malformed_one_is_refused():
    from kernelevo_server.plan_worker import Plan

    from kernelevo.targets.edits import FileEdit

    plan = Plan([FileEdit("/w/m.py", "a\n", "b\n")], "--- a\n+++ b\n")
    wire = protocol.read(io.BytesIO(protocol.encode(dataclasses.asdict(plan))))
    assert Plan.from_wire(wire) == plan
    for bad in ({"diff": "x"}, {"files": [{"path": "/w/m.py"}]}, {"files": "m.py"}):
        with pytest.raises((TypeError, ValueError)):
            Plan.from_wire(bad)
