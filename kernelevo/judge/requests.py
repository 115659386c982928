"""What the engine may ask the judge process: one typed record per request, defined once for both
sides.

The engine builds a record and sends `record.wire()` (a msgpack map of its fields and its `op`,
over the one framing of worker/protocol.py); the judge parses the map back into the same record
before it acts, so an unknown op, an unknown field or a missing one is an error reply rather than
a guess. Each request names its answer, a record of judge/replies.py, as its type parameter. No
torch here: the engine imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kernelevo.judge import replies as rp
from kernelevo.worker.protocol import Reply, Request, RequestError, RequestKinds

__all__ = [
    "Baselines",
    "Begin",
    "Bound",
    "CheckTimedOutput",
    "Compare",
    "Drop",
    "End",
    "HostProbe",
    "Inputs",
    "JudgeRequest",
    "KernelPolicy",
    "Launchers",
    "LibraryPolicy",
    "OutBuffers",
    "Probe",
    "Reference",
    "Refill",
    "RequestError",
    "SameSeed",
    "SeedVaries",
    "TimingSets",
    "parse",
]


R = TypeVar("R", bound=Reply)


@dataclass(frozen=True)
class JudgeRequest(Request, Generic[R]):
    """A request to the judge; R is the record it is answered with."""


JUDGE: RequestKinds[JudgeRequest[Any]] = RequestKinds()
REQUESTS, parse = JUDGE.by_op, JUDGE.parse


@dataclass(frozen=True)
class TaskRequest(JudgeRequest[R]):
    """A request that names the task's reference (the judge keeps one, keyed by these)."""

    task_path: str
    task_hash: str
    size: str | None
    device: str | None


# -- the task on its own, before any candidate -----------------------------------------------
@JUDGE.kind("probe")
@dataclass(frozen=True)
class Probe(TaskRequest[rp.Probed]):
    """Task faults and the memory estimate, from the reference alone."""

    seed: int = 1


# -- one verification ------------------------------------------------------------------------
@JUDGE.kind("begin")
@dataclass(frozen=True)
class Begin(TaskRequest[rp.Begun]):
    """Build Model from `seed` (on `build_on`, else where it fits) and share its weights."""

    seed: int
    exchange: str
    via: str = "ipc"
    build_on: str | None = None
    need: list[int] | None = None  # bytes as an earlier probe measured them (judge/reference.py)
    n_extra: int | None = None  # the task's extra shapes, as that probe counted them


@JUDGE.kind("same_seed")
@dataclass(frozen=True)
class SameSeed(JudgeRequest[rp.SameSeedKept]):
    """The reference keeps the weights its seed gave it (no weights could be matched)."""


@JUDGE.kind("seed_varies")
@dataclass(frozen=True)
class SeedVaries(JudgeRequest[rp.SeedVaried]):
    seed: int


@JUDGE.kind("inputs")
@dataclass(frozen=True)
class Inputs(JudgeRequest[rp.InputsDrawn]):
    set: str
    seed: int
    extra: int | None = None


@JUDGE.kind("reference")
@dataclass(frozen=True)
class Reference(JudgeRequest[rp.ReferenceRan]):
    set: str


@JUDGE.kind("out_buffers")
@dataclass(frozen=True)
class OutBuffers(JudgeRequest[rp.BuffersExported]):
    """Buffers for the candidate's CUDA outputs, as the candidate's specs ask."""

    specs: list[Any] = field(default_factory=list)


@JUDGE.kind("compare")
@dataclass(frozen=True)
class Compare(JudgeRequest[rp.Compared]):
    """The candidate's outputs on a set (descriptors, as data) against the reference's."""

    set: str
    outputs: list[Any] | None = None
    aliased: list[Any] | None = None
    label: str = "input set"
    name: str | None = None
    suffix: str | None = None


@JUDGE.kind("refill")
@dataclass(frozen=True)
class Refill(JudgeRequest[rp.Refilled]):
    set: str
    seed: int


@JUDGE.kind("drop")
@dataclass(frozen=True)
class Drop(JudgeRequest[rp.Dropped]):
    set: str


@JUDGE.kind("end")
@dataclass(frozen=True)
class End(JudgeRequest[rp.Ended]):
    """The verification is over: sets and shared memory released."""


@JUDGE.kind("library_policy")
@dataclass(frozen=True)
class LibraryPolicy(JudgeRequest[rp.LibraryDecided]):
    """What the candidate process counted, for the library-op, contribution and precision rules."""

    cand_ops: dict[str, int] = field(default_factory=dict)
    allowed: list[str] = field(default_factory=list)
    backend: str = "triton"
    strict: bool = False
    precision: list[str] = field(default_factory=list)
    custom_calls: int = 0
    untraced: list[str] = field(default_factory=list)
    launches: int = 0
    kernels: int = 0


@JUDGE.kind("kernel_policy")
@dataclass(frozen=True)
class KernelPolicy(JudgeRequest[rp.KernelDecided]):
    """The names of the kernels the candidate launched, against the reference's library ops."""

    names: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)
    launched: list[str] = field(default_factory=list)
    source: str = ""
    strict: bool = False


@JUDGE.kind("launchers")
@dataclass(frozen=True)
class Launchers(JudgeRequest[rp.LaunchersBuilt]):
    """Triton's C launchers for these argument signatures, built into the shared cache
    (judge/launchers.py; each spec as runner/precompile.py::launcher_spec reports it)."""

    specs: list[dict[str, Any]] = field(default_factory=list)


# -- timing ----------------------------------------------------------------------------------
@JUDGE.kind("timing_sets")
@dataclass(frozen=True)
class TimingSets(JudgeRequest[rp.TimingSetsDrawn]):
    seed: int = 0
    reserve_bytes: float = 0.0


@JUDGE.kind("baselines")
@dataclass(frozen=True)
class Baselines(JudgeRequest[rp.BaselinesTimed]):
    """Eager and torch.compile timed here (or `stored`, as a judge measured them before)."""

    key: str
    compile_mode: str | None = "default"
    max_time_s: float = 10.0
    allow_tf32: bool = False
    stored: dict[str, Any] | None = None


@JUDGE.kind("bound")
@dataclass(frozen=True)
class Bound(JudgeRequest[rp.Bounded]):
    """Whether `candidate_ms` is within what the measured peaks allow."""

    key: str
    candidate_ms: float


@JUDGE.kind("host_probe")
@dataclass(frozen=True)
class HostProbe(JudgeRequest[rp.HostProbed]):
    """Launch costs through this machine's channel, for the wall-time cross-check."""


@JUDGE.kind("check_timed_output")
@dataclass(frozen=True)
class CheckTimedOutput(JudgeRequest[rp.Compared]):
    """The output of the candidate's back-to-back timed calls on timing set 0."""

    outputs: list[Any] | None = None
    aliased: list[Any] | None = None
    label: str = "the timed calls"
