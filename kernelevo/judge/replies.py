"""What the judge process answers: one typed record per reply, named by its request in
judge/requests.py (`class Probe(TaskRequest[Probed])`).

The judge answers with `reply.wire()`; the engine's JudgeClient parses the map back into the
record the request names, so every reader sees fields, not keys, and a reply with a field too
many or missing is a protocol error at the seam. A `Check` inside a reply crosses as a map and
comes back as a Check. Descriptors of shared tensors stay plain data: the candidate process
reads them. No torch here: the engine imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelevo.verdict import Check
from kernelevo.worker.protocol import Reply

__all__ = [
    "BaselinesTimed",
    "Begun",
    "Bounded",
    "BuffersExported",
    "Compared",
    "Dropped",
    "Ended",
    "HostProbed",
    "InputsDrawn",
    "KernelDecided",
    "LaunchersBuilt",
    "LibraryDecided",
    "Probed",
    "ReferenceRan",
    "Refilled",
    "SameSeedKept",
    "SeedVaried",
    "TimingSetsDrawn",
]


@dataclass(frozen=True)
class MemoryPlan(Reply):
    """The task's need and the device's memory, as the engine's GPU gate reads them."""

    need_gib: float
    device_gib: float
    need: list[int]  # bytes: inputs per set, outputs, weights


@dataclass(frozen=True)
class Probed(MemoryPlan):
    """The reference ran alone on the input sets without a fault; `n_extra`, its extra shapes."""

    probed: bool = True
    n_extra: int = 0


@dataclass(frozen=True)
class Begun(MemoryPlan):
    """Model built from the seed: its init values, randomised weights and the weights before
    randomising, as descriptors the candidate process maps; where it was built (`built_on`);
    `probe`, a tensor that tells whether CUDA IPC crosses into the candidate's sandbox."""

    init: list[Any]
    weights: dict[str, Any]
    initial: dict[str, Any]
    built_on: str
    n_extra: int
    probe: dict[str, Any] | None = None


@dataclass(frozen=True)
class SameSeedKept(Reply):
    same_seed: bool = True


@dataclass(frozen=True)
class SeedVaried(Reply):
    """Whether Model's weights differ between seeds (a fixed init decides nothing)."""

    varies: bool


@dataclass(frozen=True)
class InputsDrawn(Reply):
    """One input set: descriptors for the candidate process, and the set as a verdict records it."""

    args: list[Any]
    summary: list[dict[str, Any]]


@dataclass(frozen=True)
class ReferenceRan(Reply):
    ran: bool
    seconds: float


@dataclass(frozen=True)
class BuffersExported(Reply):
    """Buffers for the candidate's CUDA outputs, exported from the judge."""

    buffers: list[dict[str, Any]]


@dataclass(frozen=True)
class Compared(Reply):
    """The checks of one input set's outputs (and of its inputs, left unchanged or not)."""

    checks: list[Check]


@dataclass(frozen=True)
class Refilled(Reply):
    refilled: bool = True


@dataclass(frozen=True)
class Dropped(Reply):
    dropped: bool = True


@dataclass(frozen=True)
class Ended(Reply):
    """The compute ops the reference ran during the verification."""

    reference_ops: list[str]


@dataclass(frozen=True)
class LibraryDecided(Reply):
    """The library-op rule, whether custom kernels produced the outputs, and the precision met."""

    checks: list[Check]
    precision: Check | None
    library_ops: list[str]
    kept: list[str]
    split: str
    needs_profile: bool


@dataclass(frozen=True)
class KernelDecided(Reply):
    """The check of the kernels the profiler saw against the library-op rule."""

    check: Check


@dataclass(frozen=True)
class TimingSetsDrawn(Reply):
    sets: list[Any]


@dataclass(frozen=True)
class BaselinesTimed(Reply):
    """Eager and torch.compile timed in the judge, the reference's work and the device; `cached`
    when this judge or the engine's store had them, `stored` when they came from the store."""

    eager: dict[str, Any]
    compile: dict[str, Any] | None = None
    compile_error: str | None = None
    compile_mode: str | None = None
    tf32: bool = False
    phases: dict[str, float] = field(default_factory=dict)
    work: dict[str, Any] = field(default_factory=dict)
    device: dict[str, Any] = field(default_factory=dict)
    cached: bool = False
    stored: bool = False


@dataclass(frozen=True)
class Bounded(Reply):
    """Whether the candidate's time is physically plausible for the task's work."""

    plausible: bool
    note: str
    roofline: dict[str, Any]


@dataclass(frozen=True)
class HostProbed(Reply):
    """The wall time of one empty launch now and at its fastest (the timing cross-check's scale)."""

    ms_per_launch: float
    idle_ms_per_launch: float


@dataclass(frozen=True)
class LaunchersBuilt(Reply):
    """Launchers built now, found built, and refused (with why: not Triton's types, a failed build)."""

    built: int = 0
    found: int = 0
    refused: list[str] = field(default_factory=list)
    seconds: float = 0.0
