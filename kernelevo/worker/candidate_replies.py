"""What a candidate process answers: one typed record per request of worker/candidate_requests.py
(`Load` → `Loaded`, `Run` and `Repeat` → `Outputs`, ...), and what the runner host answers of
its own (`Open` → `Opened`, `Relay` → `Relayed`, `Close` → `Closed`).

The candidate process builds the record and sends `wire()` through the runner host; the engine's
CandidateClient parses the frame back. The process runs candidate code, so its answers are data
the candidate could have forged: parsing checks every field's kind, and anything an answer claims
can only count against the candidate. No torch here: the engine imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelevo.worker.protocol import Reply

__all__ = [
    "CandidateAnswer",
    "Closed",
    "CopiedOut",
    "HostAnswer",
    "HostPong",
    "Loaded",
    "Opened",
    "Outputs",
    "Profiled",
    "Relayed",
    "Reported",
    "SetDropped",
    "Timed",
]


@dataclass(frozen=True)
class CandidateAnswer(Reply):
    """What any answer may carry instead of its own fields: `failure`, the candidate's own
    ({status, reason, log}); `error`, a request it could not serve; `integrity_violation`, harness
    parts it left patched (added by the runner host)."""

    failure: dict[str, Any] | None = None
    error: str | None = None
    integrity_violation: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class Loaded(CandidateAnswer):
    """ModelNew built (where: `built_on`) with the reference's weights by `weights_rule` (`plan`:
    matched by meaning; `transformed`: some changed on the way in), or `ipc_failed`: the judge's
    tensors did not arrive by CUDA IPC."""

    loaded: bool = False
    load_s: float = 0.0
    built_on: str = "cpu"
    plan: bool = False
    transformed: bool = False
    weights_rule: str = ""
    ipc_failed: str | None = None


@dataclass(frozen=True)
class Outputs(CandidateAnswer):
    """One forward's outputs as descriptors (`pending`: CUDA outputs waiting for the judge's
    buffers), those that alias an input or a weight, and what the process counted of the run."""

    outputs: list[dict[str, Any]] = field(default_factory=list)
    aliased: list[int] = field(default_factory=list)
    launches: int = 0
    custom_calls: int = 0
    untraced: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class CopiedOut(CandidateAnswer):
    copied: int = 0


@dataclass(frozen=True)
class SetDropped(CandidateAnswer):
    dropped: bool = True


@dataclass(frozen=True)
class Timed(CandidateAnswer):
    """The candidate's own timing on the judge's timing sets (a claim the judge cross-checks)."""

    timing: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Profiled(CandidateAnswer):
    """The names of the kernels the profiler saw."""

    kernels: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Reported(CandidateAnswer):
    """What the process counted over the verification: library ops, launches, kernels and their
    signatures, and whether it imported torch._dynamo."""

    ops: dict[str, int] = field(default_factory=dict)
    launches: int = 0
    kernels: dict[str, Any] = field(default_factory=dict)
    signatures: dict[str, Any] = field(default_factory=dict)
    dynamo: bool = False


# -- the runner host's own answers -----------------------------------------------------------
@dataclass(frozen=True)
class HostAnswer(Reply):
    """`error`: a frame the host could not take for one of its requests."""

    error: str | None = None


@dataclass(frozen=True)
class HostPong(HostAnswer):
    pong: bool = True
    pid: int = 0
    child: int | None = None


@dataclass(frozen=True)
class Opened(HostAnswer):
    """The candidate process now open (`spare`: the one forked ahead), after `ready_s` seconds
    of waiting for it to start."""

    opened: int | None = None
    spare: bool = False
    ready_s: float | None = None


@dataclass(frozen=True)
class Paused(HostAnswer):
    """The open process (`child`, None when none is open) stopped or resumed as asked."""

    child: int | None = None
    stopped: bool = False


@dataclass(frozen=True)
class Relayed(HostAnswer):
    """The open process's answer (`reply`, a frame of its own), or how it failed to give one:
    past its limit (`child_timeout`), ended (`child_exit`: "exit code N" / "signal N"), or an
    unreadable frame (`child_protocol`)."""

    reply: dict[str, Any] | None = None
    child_timeout: float | None = None
    child_exit: str | None = None
    child_protocol: str | None = None


@dataclass(frozen=True)
class Closed(HostAnswer):
    """The process ended (`closed`: its pid) and what it left removed (`swept`; empty where the
    sweep runs after the reply, as the runner host does: runner/host.py, `Host.settle`)."""

    closed: int | None = None
    swept: list[str] = field(default_factory=list)
