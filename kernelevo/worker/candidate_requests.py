"""What the engine may ask a candidate process (through the runner host): one typed record per
request, defined once for both sides.

The engine builds a record, the runner host relays `record.wire()` untouched, and the candidate
process parses it back into the same record before it acts. Here, outside the runner package,
because the engine builds these and must not import what runs candidates; no torch here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelevo.worker.protocol import Request, parse_request, request_kind

__all__ = [
    "CandidateRequest",
    "CopyOut",
    "Drop",
    "Load",
    "Profile",
    "Repeat",
    "Report",
    "Run",
    "Time",
    "parse",
]


@dataclass(frozen=True)
class CandidateRequest(Request):
    pass


REQUESTS: dict[str, type[Request]] = {}


def parse(message: dict[str, Any]) -> CandidateRequest:
    """The candidate request a frame stands for; RequestError when it stands for none."""
    request = parse_request(REQUESTS, message)
    assert isinstance(request, CandidateRequest)
    return request


@request_kind(REQUESTS, "load")
@dataclass(frozen=True)
class Load(CandidateRequest):
    """Import the candidate and build ModelNew from `seed` (on `build_on`), with the judge's weights
    (descriptors, as data) and `probe`, the tensor that shows whether CUDA IPC crosses."""

    candidate_path: str
    exchange: str
    device: str | None = None
    via: str = "ipc"
    init: list[Any] = field(default_factory=list)
    weights: dict[str, Any] = field(default_factory=dict)
    initial: dict[str, Any] = field(default_factory=dict)
    probe: Any = None
    cache: str | None = None
    seed: int = 0
    same_seed_only: bool = False
    build_on: str | None = None


@request_kind(REQUESTS, "run")
@dataclass(frozen=True)
class Run(CandidateRequest):
    """ModelNew on one input set; the outputs go back as descriptors."""

    set: str
    args: list[Any] = field(default_factory=list)
    label: str = "an input set"


@request_kind(REQUESTS, "repeat")
@dataclass(frozen=True)
class Repeat(CandidateRequest):
    """`n` calls back to back on one set, then one synchronisation."""

    set: str
    args: list[Any] = field(default_factory=list)
    n: int = 1


@request_kind(REQUESTS, "time")
@dataclass(frozen=True)
class Time(CandidateRequest):
    """The candidate's own timing on the judge's timing sets (cross-checked by the judge)."""

    sets: list[Any] = field(default_factory=list)
    max_time_s: float = 10.0


@request_kind(REQUESTS, "profile")
@dataclass(frozen=True)
class Profile(CandidateRequest):
    """The names of the kernels one call launches."""

    set: str
    args: list[Any] = field(default_factory=list)


@request_kind(REQUESTS, "copy_out")
@dataclass(frozen=True)
class CopyOut(CandidateRequest):
    """The last CUDA outputs copied into the buffers the judge exported."""

    buffers: list[Any] = field(default_factory=list)


@request_kind(REQUESTS, "drop")
@dataclass(frozen=True)
class Drop(CandidateRequest):
    set: str


@request_kind(REQUESTS, "report")
@dataclass(frozen=True)
class Report(CandidateRequest):
    """What this process counted: library ops, launches, kernels."""
