"""How much a verified time can still gain: its distance to the task's roofline floor.

A kernel that already moves the task's compulsory bytes (each input read once, each output
written once) at the measured copy bandwidth has nothing left for a search to find beyond the
noise; on the H200 the parameter search spent 139-156 s per elementwise KernelBench task on
configurations that ran at that floor and gained nothing. The counted FLOPs at the measured
GEMM peak bound only the reference's algorithm: they stop a parameter search (its
configurations keep their kernel's arithmetic) but never a model search, which may find an
algorithm that needs fewer (a diagonal matmul done elementwise).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelevo.verdict import Verdict

__all__ = ["AT_FLOOR", "Floor", "family_floor", "memory_floor"]

AT_FLOOR = 0.95  # a time at this fraction of its floor or closer can gain at most ~5 %
# a time this far below its memory floor shows the byte count is no floor for the task (a masked
# softmax skips half its input); elementwise kernels run a few % past the measured copy peak
BEYOND_FLOOR = 1.10


@dataclass(frozen=True)
class Floor:
    """A time below which a kernel cannot go, and what sets it."""

    ms: float
    kind: str  # "memory": compulsory bytes at the measured bandwidth; "compute": counted FLOPs

    def reached_by(self, time_ms: float | None) -> bool:
        """Whether `time_ms` is within 1 / AT_FLOOR of this floor, and not so far below it that
        the floor is not one (BEYOND_FLOOR)."""
        if not time_ms or time_ms <= 0:
            return False
        return AT_FLOOR * time_ms <= self.ms <= BEYOND_FLOOR * time_ms

    def describe(self, time_ms: float) -> str:
        """'3.2 ms is at 97% of the task's memory floor (3.1 ms: ...)', for a note or a stop reason."""
        what = (
            "its compulsory bytes at the measured bandwidth"
            if self.kind == "memory"
            else "its counted FLOPs at the measured GEMM peak"
        )
        return (
            f"{time_ms:.4g} ms is at {self.ms / time_ms:.0%} of the task's {self.kind} floor "
            f"({self.ms:.4g} ms: {what})"
        )


def _floors(verdict: Verdict) -> tuple[float | None, float | None]:
    r = verdict.roofline or {}
    gbps, tflops = r.get("peak_gbps"), r.get("peak_tflops")
    nbytes, flops = r.get("bytes"), r.get("flops")
    mem = nbytes / (gbps * 1e9) * 1e3 if nbytes and gbps else None
    flop = flops / (tflops * 1e12) * 1e3 if flops and tflops else None
    return mem, flop


def memory_floor(verdict: Verdict) -> Floor | None:
    """The memory floor of the task `verdict` was timed on; None where nothing was measured."""
    mem, _ = _floors(verdict)
    return Floor(mem, "memory") if mem else None


def family_floor(verdict: Verdict) -> Floor | None:
    """The floor for configurations of `verdict`'s kernel: the higher of the memory floor and,
    when its time does not beat it, the counted FLOPs' (the kernel then does the reference's
    arithmetic, and so do its configurations)."""
    mem, flop = _floors(verdict)
    time_ms = (verdict.timings or {}).get("candidate_ms")
    floors = [Floor(mem, "memory")] if mem else []
    if flop and time_ms and time_ms >= flop:
        floors.append(Floor(flop, "compute"))
    return max(floors, key=lambda f: f.ms, default=None)
