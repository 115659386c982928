"""A candidate process's answers are typed records (kernelevo/worker/candidate_replies.py) that
each candidate request names; the engine parses every frame back and checks each field's kind,
so an answer a candidate forged (a count as a string, a field of its own) is the candidate's
failure, not data the engine acts on."""

from __future__ import annotations

from typing import Any

import pytest

from kernelevo.judge.clients import CandidateClient, CandidateFailed
from kernelevo.worker import candidate_replies as cp
from kernelevo.worker import candidate_requests as cr
from kernelevo.worker.protocol import Reply


@pytest.mark.parametrize("op", sorted(cr.REQUESTS))
def test_every_candidate_request_names_its_answer(op: str) -> None:
    kind = cr.REQUESTS[op].reply
    assert kind is not None and issubclass(kind, cp.CandidateAnswer) and issubclass(kind, Reply)


class _Host:
    """A runner host that relays every request and answers it with `answer` (nonce echoed)."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        return {"reply": self.answer, "nonce": message["nonce"]}

    def kill(self) -> None:
        pass

    def log_tail(self) -> str:
        return ""


def _run(answer: dict[str, Any]) -> cp.Outputs:
    client = CandidateClient(_Host(answer), 5)  # type: ignore[arg-type]
    return client.ask(cr.Run(set="s0", args=[]), "running forward on set 1")


def test_the_answer_comes_back_as_its_record() -> None:
    out = _run({"outputs": [{"value": 3}], "aliased": [], "launches": 2, "untraced": [0]})
    assert isinstance(out, cp.Outputs)
    assert out.launches == 2 and out.untraced == [0] and out.outputs == [{"value": 3}]


@pytest.mark.parametrize(
    ("answer", "field"),
    [
        ({"outputs": [], "launches": "999"}, "Outputs.launches: str where int belongs"),
        ({"outputs": [], "untraced": ["all"]}, "Outputs.untraced: str where int belongs"),
        ({"outputs": {}, "launches": 1}, "Outputs.outputs: dict where a list belongs"),
        ({"outputs": [], "verified": True}, "Outputs: unknown field"),
    ],
)
def test_a_forged_answer_is_the_candidates_failure(answer: dict[str, Any], field: str) -> None:
    with pytest.raises(CandidateFailed, match="malformed data") as failed:
        _run(answer)
    assert failed.value.status == "rejected" and field in failed.value.reason


def test_a_failure_the_candidate_reports_stays_its_own() -> None:
    failure = {"status": "compile_error", "reason": "line 3: syntax error", "log": ""}
    with pytest.raises(CandidateFailed) as failed:
        _run({"failure": failure})
    assert failed.value.status == "compile_error" and "syntax error" in failed.value.reason
