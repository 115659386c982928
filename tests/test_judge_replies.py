"""The judge's answers are typed records defined once (kernelevo/judge/replies.py): each request
names its reply record, the judge process builds that record, and the engine's JudgeClient parses
the frame back into it, so a reply with a field missing or too many stops at the seam."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest

from kernelevo.judge import replies as rp
from kernelevo.judge import requests as rq
from kernelevo.judge.clients import JudgeClient, JudgeFailed
from kernelevo.verdict import Check
from kernelevo.worker.protocol import ProtocolError, Reply

TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


def get_inputs():
    return [torch.randn(64, 32)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("op", sorted(rq.REQUESTS))
def test_every_request_names_the_record_the_judge_answers_with(op: str) -> None:
    from kernelevo.judge.process import Judge

    kind = rq.REQUESTS[op].reply
    assert kind is not None and issubclass(kind, Reply)
    handler = getattr(Judge, "op_" + op)
    answered = typing.get_type_hints(handler, vars(__import__(handler.__module__, fromlist=["*"])))
    assert answered["return"] is kind


def test_the_judges_frames_parse_back_into_its_records(tmp_path: Path) -> None:
    from kernelevo.judge.process import Judge

    task = tmp_path / "task.py"
    task.write_text(TASK)
    common: dict[str, Any] = {
        "task_path": str(task),
        "task_hash": "h",
        "size": "default",
        "device": "cpu",
    }
    judge = Judge()
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    steps: list[rq.JudgeRequest[Any]] = [
        rq.Probe(**common, seed=1),
        rq.Begin(**common, seed=1, exchange=str(exchange)),
        rq.Inputs(set="s0", seed=1),
        rq.Reference(set="s0"),
        rq.Drop(set="s0"),
        rq.End(),
    ]
    records = []
    for request in steps:
        kind = type(request).reply
        assert kind is not None
        records.append(kind.parse(judge.handle(request.wire())))
    probed, begun, drawn, ran, dropped, ended = records
    assert isinstance(probed, rp.Probed) and probed.probed and probed.need_gib >= 0
    assert isinstance(begun, rp.Begun) and begun.built_on == "cpu" and begun.n_extra == 0
    assert isinstance(drawn, rp.InputsDrawn) and drawn.summary[0]["shape"] == [64, 32]
    assert isinstance(ran, rp.ReferenceRan) and ran.ran
    assert isinstance(dropped, rp.Dropped) and isinstance(ended, rp.Ended)
    assert "aten.relu" in " ".join(ended.reference_ops)


def test_checks_inside_a_reply_come_back_as_checks() -> None:
    sent = rp.Compared([Check("match[s0]", False, "max abs 3.0", {"rel_l2": 0.5})])
    wire = sent.wire()
    assert wire == {
        "checks": [
            {
                "name": "match[s0]",
                "passed": False,
                "message": "max abs 3.0",
                "detail": {"rel_l2": 0.5},
            }
        ]
    }
    assert rp.Compared.parse({**wire, "nonce": "n"}) == sent
    decided = rp.LibraryDecided.parse(
        {
            "checks": [],
            "precision": {"name": "precision", "passed": True},
            "library_ops": [],
            "kept": [],
            "split": "",
            "needs_profile": False,
        }
    )
    assert decided.precision == Check("precision", True)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ({"plausible": True, "note": ""}, "Bounded.*roofline"),
        ({"plausible": True, "note": "", "roofline": {}, "verdict": "verified"}, "unknown field"),
    ],
)
def test_a_reply_with_a_field_missing_or_too_many_is_refused(frame: dict, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        rp.Bounded.parse(frame)


class _Answers:
    """A channel that answers every request with `reply` (the client's own nonce echoed)."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        return {**self.reply, "nonce": message["nonce"]}

    def kill(self) -> None:
        pass


def test_the_client_hands_back_the_record_and_refuses_a_malformed_reply() -> None:
    good = JudgeClient(_Answers({"plausible": False, "note": "over peak", "roofline": {}}), 5)  # type: ignore[arg-type]
    bounded = good.ask(rq.Bound(key="k", candidate_ms=0.001))
    assert isinstance(bounded, rp.Bounded) and bounded.note == "over peak"
    bad = JudgeClient(_Answers({"plausible": True}), 5)  # type: ignore[arg-type]
    with pytest.raises(JudgeFailed, match="judge bound: a malformed reply"):
        bad.ask(rq.Bound(key="k", candidate_ms=0.001))


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ({"ms_per_launch": "0.01", "idle_ms_per_launch": 0.005}, "str where float belongs"),
        ({"ms_per_launch": True, "idle_ms_per_launch": 0.005}, "bool where float belongs"),
    ],
)
def test_a_field_of_the_wrong_kind_is_refused(frame: dict, message: str) -> None:
    with pytest.raises(ProtocolError, match=f"HostProbed.ms_per_launch: {message}"):
        rp.HostProbed.parse(frame)
    assert rp.HostProbed.parse({"ms_per_launch": 1, "idle_ms_per_launch": 0.5}).ms_per_launch == 1
