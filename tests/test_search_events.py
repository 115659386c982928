"""A search's events are typed records on both sides of `--progress json`
(kernelevo/search/events.py): what the search writes parses back into the same record, and a
line that is not one of them is refused at the seam, naming what is wrong."""

from __future__ import annotations

import json

import pytest

from kernelevo.outcome import OutcomeKind, RunOutcome
from kernelevo.phase import Phase
from kernelevo.search.events import (
    Done,
    ProgressEvent,
    SearchFailed,
    Started,
    Status,
    parse_line,
)
from kernelevo.search.progress import describe_step
from kernelevo.worker.protocol import ProtocolError


def _progress(**kw: object) -> ProgressEvent:
    index, message = describe_step(Phase("iteration", 0), 20, "llm", "verified", None)
    fields = dict(
        run_id="r",
        phase="iteration",
        index=index,
        total=20,
        origin="llm",
        status="verified",
        speedup=None,
        message=message,
        verified=True,
        tokens=1234,
    )
    fields.update(kw)
    return ProgressEvent(**fields)  # type: ignore[arg-type]


EVERY_KIND = [
    Started("r", task="/w/softmax.py", provider="offline", backend="triton"),
    Status("offline candidates: compiling with Inductor"),
    _progress(),
    _progress(phase="tune", speedup=1.5, best_speedup=1.5, task="softmax"),
    Done("r", "cancelled", RunOutcome(OutcomeKind.CANCELLED).to_dict(), tokens=5),
    SearchFailed("model error: HTTP 400", run_id="r"),
]


@pytest.mark.parametrize("event", EVERY_KIND, ids=lambda e: e.kind)
def test_every_event_round_trips_through_its_json_line(event):
    line = event.line()
    assert "\n" not in line and json.loads(line)["event"] == event.kind
    assert parse_line(line) == event


def test_an_event_said_of_a_task_keeps_its_fields():
    named = _progress().of_task("softmax")
    assert named.task == "softmax" and named.message == _progress().message
    assert named.text().startswith("softmax: iteration 1 of 20 (llm): verified")


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("not json", "not a JSON line"),
        ("[1, 2]", "not an event"),
        ('{"event": "verified", "run_id": "r"}', "unknown search event 'verified'"),
        ('{"event": "start"}', "run_id"),  # a field missing
        ('{"event": "start", "run_id": "r", "worker": 12}', "unknown field(s) worker"),
        ('{"event": "status", "message": 3}', "Status.message"),  # a field of the wrong type
    ],
)
def test_a_line_that_is_no_event_is_refused_naming_why(line, says):
    with pytest.raises(ProtocolError) as caught:
        parse_line(line)
    assert says in str(caught.value)


def test_a_phase_outside_the_search_s_phases_is_refused():
    wire = json.loads(_progress().line())
    with pytest.raises(ProtocolError, match=r"ProgressEvent\.phase: .warmup. is none of"):
        parse_line(json.dumps({**wire, "phase": "warmup"}))


def test_the_terminal_line_says_where_the_search_stands():
    assert _progress().text() == (
        "iteration 1 of 20 (llm): verified · evaluated 0 · best verified, speed not measured · "
        "1,234 tokens · $0.00"
    )
