"""What the engine may ask a candidate process, and the runner host that forks it: one typed
record per request, defined once for both sides.

The engine builds a record, the runner host relays `record.wire()` untouched, and the candidate
process parses it back into the same record before it acts; each candidate request names its
answer (worker/candidate_replies.py). Here, outside the runner package,
because the engine builds these and must not import what runs candidates; no torch here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kernelevo.worker import candidate_replies as cp
from kernelevo.worker.protocol import Reply, Request, RequestKinds

__all__ = [
    "CandidateRequest",
    "Close",
    "CopyOut",
    "Drop",
    "HostRequest",
    "Load",
    "Open",
    "Ping",
    "Profile",
    "Relay",
    "Repeat",
    "Report",
    "Run",
    "Time",
    "parse",
    "parse_host",
]


R = TypeVar("R", bound=Reply)


@dataclass(frozen=True)
class CandidateRequest(Request, Generic[R]):
    """A request to the candidate process; R is the record it is answered with."""


CANDIDATE: RequestKinds[CandidateRequest[Any]] = RequestKinds()
REQUESTS, parse = CANDIDATE.by_op, CANDIDATE.parse


@CANDIDATE.kind("load")
@dataclass(frozen=True)
class Load(CandidateRequest[cp.Loaded]):
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


@CANDIDATE.kind("run")
@dataclass(frozen=True)
class Run(CandidateRequest[cp.Outputs]):
    """ModelNew on one input set; the outputs go back as descriptors."""

    set: str
    args: list[Any] = field(default_factory=list)
    label: str = "an input set"


@CANDIDATE.kind("repeat")
@dataclass(frozen=True)
class Repeat(CandidateRequest[cp.Outputs]):
    """`n` calls back to back on one set, then one synchronisation."""

    set: str
    args: list[Any] = field(default_factory=list)
    n: int = 1


@CANDIDATE.kind("time")
@dataclass(frozen=True)
class Time(CandidateRequest[cp.Timed]):
    """The candidate's own timing on the judge's timing sets (cross-checked by the judge)."""

    sets: list[Any] = field(default_factory=list)
    max_time_s: float = 10.0


@CANDIDATE.kind("profile")
@dataclass(frozen=True)
class Profile(CandidateRequest[cp.Profiled]):
    """The names of the kernels one call launches."""

    set: str
    args: list[Any] = field(default_factory=list)


@CANDIDATE.kind("copy_out")
@dataclass(frozen=True)
class CopyOut(CandidateRequest[cp.CopiedOut]):
    """The last CUDA outputs copied into the buffers the judge exported."""

    buffers: list[Any] = field(default_factory=list)


@CANDIDATE.kind("drop")
@dataclass(frozen=True)
class Drop(CandidateRequest[cp.SetDropped]):
    set: str


@CANDIDATE.kind("report")
@dataclass(frozen=True)
class Report(CandidateRequest[cp.Reported]):
    """What this process counted: library ops, launches, kernels."""


# -- to the runner host itself ---------------------------------------------------------------
@dataclass(frozen=True)
class HostRequest(Request, Generic[R]):
    """A request to the runner host itself; R is the record it is answered with."""


HOST: RequestKinds[HostRequest[Any]] = RequestKinds()
HOST_REQUESTS, parse_host = HOST.by_op, HOST.parse


@HOST.kind("ping")
@dataclass(frozen=True)
class Ping(HostRequest[cp.HostPong]):
    pass


@HOST.kind("open")
@dataclass(frozen=True)
class Open(HostRequest[cp.Opened]):
    """Hand out a fresh candidate process (the spare forked ahead)."""


@HOST.kind("candidate")
@dataclass(frozen=True)
class Relay(HostRequest[cp.Relayed]):
    """One candidate request (`request`, a CandidateRequest's wire map) relayed to the open
    process; `candidate_path` travels at the top, where the pool maps it into the inbox."""

    request: dict[str, Any]
    timeout: float = 60.0
    candidate_path: str | None = None


@HOST.kind("pause")
@dataclass(frozen=True)
class Pause(HostRequest[cp.Paused]):
    """Stop (`stop`) or resume the open process and its group while another verdict's timing
    has the GPU alone, so that nothing it runs can reach that timing."""

    stop: bool = True


@HOST.kind("close")
@dataclass(frozen=True)
class Close(HostRequest[cp.Closed]):
    """End the open process; `profiler`: whether the task's verdicts profile kernels (None: not
    known), so the next spare starts the profiler while it waits; `libraries`: the vendor
    libraries ("cublas", "cudnn") the candidate called (None: not known), whose handles the next
    spare makes while it waits."""

    profiler: bool | None = None
    libraries: list[str] | None = None
