"""What a search tells whoever watches it, one typed record per kind of event.

The search and the CLI build these records; `kernelevo optimize --progress json` writes each as
one JSON line (`line()`), text mode prints the people's form, and the language server parses each
line back (`parse_line`) into the same record, so the two sides of that pipe cannot drift apart
(a test stand-in for the search emits these records too). Torch-free: the server imports it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Self, TypeVar

from kernelevo.phase import PhaseKind
from kernelevo.worker.protocol import ProtocolError, Reply


@dataclass(frozen=True)
class SearchEvent(Reply):
    """`kind` is the `event` field of the line; `task` names the task the event belongs to where
    several searches share one stream (`--all`)."""

    kind: ClassVar[str] = ""
    task: str | None = field(default=None, kw_only=True)

    def line(self) -> str:
        """The event as one JSON line (without the newline)."""
        return json.dumps({"event": self.kind, **self.wire()})

    def of_task(self, name: str) -> Self:
        """The same event, said of task `name`."""
        return replace(self, task=name)


Events = Callable[[SearchEvent], None]
E = TypeVar("E", bound=type[SearchEvent])
KINDS: dict[str, type[SearchEvent]] = {}


def event(kind: str) -> Callable[[E], E]:
    """Class decorator: the record is the event whose `event` field is `kind`."""

    def register(cls: E) -> E:
        cls.kind = kind
        KINDS[kind] = cls
        return cls

    return register


@event("start")
@dataclass(frozen=True)
class Started(SearchEvent):
    """A search began (or resumed) run `run_id` on `task` (its path, or its name with `--all`)."""

    run_id: str
    provider: str = ""
    backend: str = ""
    resumed: bool = False


@event("status")
@dataclass(frozen=True)
class Status(SearchEvent):
    """What the search is doing before its first verdict (the offline phase can take minutes)."""

    message: str


@event("progress")
@dataclass(frozen=True)
class ProgressEvent(SearchEvent):
    """One evaluated candidate (or a model answer without code). `index` of `total` counts
    positions within the phase from 1 (seed 3 of 7, iteration 4 of 20, configuration 5 of 12);
    `total` is None when the phase has no fixed length. `iteration` is how many model iterations
    have finished (never negative); in the model's phases (iteration, repair) `total` is how
    many the search plans."""

    run_id: str
    phase: PhaseKind
    index: int
    total: int | None
    origin: str
    status: str
    speedup: float | None
    message: str
    attempt: int = 0
    candidate_id: int | None = None
    iteration: int = 0
    evaluated: int = 0
    best_speedup: float | None = None
    best_speedup_compile: float | None = None
    verified: bool = False
    tokens: int = 0
    cost_usd: float = 0.0

    def text(self) -> str:
        """One terminal line: what happened, then where the search stands."""
        best = (
            f"{self.best_speedup:.2f}x"
            if self.best_speedup
            else "verified, speed not measured"
            if self.verified
            else "none yet"
        )
        return (
            (f"{self.task}: " if self.task else "")
            + f"{self.message} · evaluated {self.evaluated} · best {best} · "
            f"{self.tokens:,} tokens · ${self.cost_usd:.2f}"
        )


@event("done")
@dataclass(frozen=True)
class Done(SearchEvent):
    """A search ended: `status` is its outcome's kind and `outcome` the RunOutcome as a map
    (kernelevo/outcome.py), the one judgement every reader shows."""

    run_id: str
    status: str
    outcome: dict[str, Any]
    best_speedup: float | None = None
    best_speedup_compile: float | None = None
    tokens: int = 0
    cost_usd: float = 0.0


@event("error")
@dataclass(frozen=True)
class SearchFailed(SearchEvent):
    """A search (or, with `--all`, one target's) stopped on an error, said in one line."""

    message: str
    run_id: str | None = None


def parse_event(data: Mapping[str, Any]) -> SearchEvent:
    """The record of one event map (a parsed line); ProtocolError for an unknown kind, a field
    missing or too many, or a field of the wrong type."""
    cls = KINDS.get(str(data.get("event")))
    if cls is None:
        raise ProtocolError(f"unknown search event {data.get('event')!r}")
    return cls.parse({k: v for k, v in data.items() if k != "event"})


def parse_line(line: str) -> SearchEvent:
    """The record of one JSON line of `--progress json`; ProtocolError when it is none."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not a JSON line: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"a line holds a {type(data).__name__}, not an event")
    return parse_event(data)
