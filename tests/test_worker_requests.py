"""Requests to the judge, to a candidate process and to the compile worker are typed records defined
once (kernelevo/judge/requests.py, worker/candidate_requests.py, worker/compile_requests.py, over
worker/protocol.py's Request): the engine sends `record.wire()`, the receiver parses the same
record back, and a frame that is no request (an unknown op, an unknown or a missing field) is
answered with an error instead of being guessed at."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import msgpack
import pytest

from kernelevo.judge import requests as rq
from kernelevo.worker import candidate_requests as cr
from kernelevo.worker import compile_requests as compile_rq


def _example(cls: type[rq.JudgeRequest]) -> rq.JudgeRequest:
    values: dict[str, typing.Any] = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        kind = str(hints[f.name])
        values[f.name] = 3 if "int" in kind else 2.5 if "float" in kind else f"{f.name}-x"
    return cls(**values)


@pytest.mark.parametrize("op", sorted(rq.REQUESTS))
def test_every_request_crosses_the_wire_and_comes_back_the_same_record(op: str) -> None:
    request = _example(rq.REQUESTS[op])
    frame = msgpack.unpackb(msgpack.packb({**request.wire(), "nonce": "n"}), raw=False)
    assert frame["op"] == op
    assert rq.parse(frame) == request


def test_each_op_names_one_record() -> None:
    ops = [cls.op for cls in rq.REQUESTS.values()]
    assert len(ops) == len(set(ops)) == len(rq.REQUESTS)
    assert all(rq.REQUESTS[op].op == op for op in ops)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ({"op": "verified"}, "unknown op 'verified'"),
        ({"op": "drop", "set": "s0", "status": "verified"}, "drop: unknown field(s) status"),
        ({"op": "bound", "key": "k"}, "bound: "),
        ({}, "unknown op None"),
    ],
)
def test_a_frame_that_is_no_request_is_refused(frame: dict, message: str) -> None:
    with pytest.raises(rq.RequestError, match=message.replace("(", r"\(").replace(")", r"\)")):
        rq.parse(frame)


def test_the_judge_answers_a_malformed_request_with_an_error() -> None:
    from kernelevo.judge.process import Judge

    reply = Judge().handle({"op": "timing_sets", "seed": 1, "sets": 99})
    assert reply == {"error": "timing_sets: unknown field(s) sets"}
    assert "unknown op" in Judge().handle({"op": "exec", "code": "print(1)"})["error"]


@pytest.mark.parametrize(
    ("kinds", "parse", "op"),
    [(cr.REQUESTS, cr.parse, op) for op in sorted(cr.REQUESTS)]
    + [(cr.HOST_REQUESTS, cr.parse_host, op) for op in sorted(cr.HOST_REQUESTS)]
    + [(compile_rq.REQUESTS, compile_rq.parse, op) for op in sorted(compile_rq.REQUESTS)],
)
def test_every_candidate_host_and_compile_request_comes_back_the_same_record(
    kinds, parse, op: str
) -> None:
    request = _example(kinds[op])
    frame = msgpack.unpackb(msgpack.packb(request.wire()), raw=False)
    assert parse(frame) == request


def test_the_runner_host_refuses_a_frame_that_is_no_request() -> None:
    from kernelevo.runner.host import _answer

    no_host: Any = None  # refused before the host is touched
    assert "candidate: " in _answer(no_host, {"op": "candidate", "timeout": 5})["error"]
    assert _answer(no_host, {"op": "close", "verdict": "verified"}) == {
        "error": "close: unknown field(s) verdict"
    }


def test_the_compile_worker_refuses_a_frame_that_is_no_request() -> None:
    from kernelevo.runner.compile_worker import compile_request

    assert compile_request({"op": "precompile", "task_path": "t.py"}) == {
        "error": "precompile: Precompile.__init__() missing 1 required positional argument: "
        "'candidate_path'"
    }
    assert compile_request({"op": "run", "set": "s"}) == {"error": "unknown op 'run'"}


def test_the_candidate_process_refuses_a_frame_that_is_no_request() -> None:
    from kernelevo.runner.candidate import CandidateProcess

    proc = CandidateProcess()
    assert proc.handle({"op": "run", "set": "s0"}) == {"error": "no candidate loaded"}
    assert proc.handle({"op": "run", "set": "s0", "verified": True}) == {
        "error": "run: unknown field(s) verified"
    }
    assert "unknown op 'exec'" in proc.handle({"op": "exec"})["error"]


def test_every_compile_request_names_its_reply_record() -> None:
    from kernelevo.worker.compile_replies import AotCompiled, Compiled

    assert compile_rq.Precompile.reply is Compiled and compile_rq.Aot.reply is AotCompiled
    answered = Compiled.parse({"status": "compiled", "kernels": ["k"], "cache_folder": "/x"})
    assert answered.kernels == ["k"] and answered.cache_folder == "/x" and answered.error is None
