"""How a run ended, and the one definition of "improved".

The engine decides a run's outcome once, here; the stored result, the CLI's summary, the
language server and the editor extension (client-vscode/src/outcome.ts mirrors this) all read
the same record instead of judging the numbers again. Torch-free: the server imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kernelevo.measure.timing_stats import ship_decision


class OutcomeKind(str, Enum):
    IMPROVED = "improved"  # faster than eager beyond the noise, not slower than torch.compile
    VERIFIED_UNMEASURED = "verified_unmeasured"  # correct, but no GPU to measure its speed
    NO_IMPROVEMENT = "no_improvement"  # correct and timed, not clearly faster
    NO_VERIFIED = "no_verified_candidate"  # no candidate passed verification
    FAILED = "failed"  # the run itself broke (model error, crash)
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class RunOutcome:
    kind: OutcomeKind
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    device: str = ""  # where the best candidate was verified: "cuda" or "cpu"
    reasons: tuple[str, ...] = field(default_factory=tuple)  # why not improved / why it failed
    versus_compile: str = ""  # improved: "beats" or "matches" torch.compile; "" when not timed

    @property
    def improved(self) -> bool:
        return self.kind is OutcomeKind.IMPROVED

    @property
    def verified(self) -> bool:
        return self.kind in (
            OutcomeKind.IMPROVED,
            OutcomeKind.VERIFIED_UNMEASURED,
            OutcomeKind.NO_IMPROVEMENT,
        )

    @property
    def applicable(self) -> bool:
        """Apply is offered for a faster kernel, or for a CPU-verified one under that label;
        never for a kernel that was measured and found no faster."""
        return self.kind in (OutcomeKind.IMPROVED, OutcomeKind.VERIFIED_UNMEASURED)

    def headline(self) -> str:
        """One sentence, the same in the terminal and in the editor."""
        why = "; ".join(r for r in self.reasons if r)
        if self.kind is OutcomeKind.IMPROVED:
            return f"verified, {self.speedup_eager or 0:.2f}x faster than eager PyTorch{self._compile_words()}"
        if self.kind is OutcomeKind.VERIFIED_UNMEASURED:
            return (
                "verified, speed not measured without a GPU"
                if self.device != "cuda"
                else "verified, speed not measured" + (f" ({why})" if why else "")
            )
        if self.kind is OutcomeKind.NO_IMPROVEMENT:
            return "verified, no faster kernel" + (f": {why}" if why else "")
        if self.kind is OutcomeKind.NO_VERIFIED:
            return "no verified candidate" + (f": {why}" if why else "")
        if self.kind is OutcomeKind.CANCELLED:
            return "cancelled"
        return "failed" + (f": {why}" if why else "")

    def _compile_words(self) -> str:
        sc = self.speedup_compile
        if not sc:
            return ""
        if self.versus_compile == "matches":
            return f", matches torch.compile ({sc:.2f}x, within the timing noise)"
        if self.versus_compile == "beats":
            return f", beats torch.compile ({sc:.2f}x)"
        return f", {sc:.2f}x vs torch.compile"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "speedup_eager": self.speedup_eager,
            "speedup_compile": self.speedup_compile,
            "device": self.device,
            "reasons": list(self.reasons),
            "versus_compile": self.versus_compile,
            "improved": self.improved,
            "applicable": self.applicable,
            "headline": self.headline(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunOutcome:
        return cls(
            kind=OutcomeKind(data.get("kind", "failed")),
            speedup_eager=data.get("speedup_eager"),
            speedup_compile=data.get("speedup_compile"),
            device=str(data.get("device") or ""),
            reasons=tuple(str(r) for r in data.get("reasons") or ()),
            versus_compile=str(data.get("versus_compile") or ""),
        )


def judge(
    timings: Mapping[str, Any] | None,
    *,
    verified: bool,
    device: str,
    counts: Mapping[str, int] | None = None,
) -> RunOutcome:
    """The engine's rule (timing_stats.ship_decision). Improved when the best verified candidate is
    measured faster than eager PyTorch beyond the timing noise and not slower than torch.compile
    beyond it (the outcome says whether it beats or matches torch.compile); unmeasured is not
    improved."""
    t = dict(timings or {})
    if not verified:
        return RunOutcome(OutcomeKind.NO_VERIFIED, device=device, reasons=_failure_counts(counts))
    se, sc = t.get("speedup_eager"), t.get("speedup_compile")
    if se is None:
        return RunOutcome(
            OutcomeKind.VERIFIED_UNMEASURED,
            device=device,
            reasons=() if device != "cuda" else ("no timing was recorded",),
        )
    decision = ship_decision(t)
    kind = OutcomeKind.IMPROVED if decision.ship else OutcomeKind.NO_IMPROVEMENT
    return RunOutcome(
        kind,
        speedup_eager=se,
        speedup_compile=sc,
        device=device,
        reasons=() if decision.ship else (decision.why_not,),
        versus_compile=decision.versus_compile,
    )


def from_status(
    status: str,
    *,
    verified: bool,
    speedup_eager: float | None,
    speedup_compile: float | None,
    device: str = "",
    reason: str = "",
) -> RunOutcome:
    """A stored result's outcome. Rows written before outcomes were recorded said
    "no_improvement" for a CPU-verified run: they read as verified, speed not measured."""
    try:
        kind = OutcomeKind(status)
    except ValueError:
        kind = (
            OutcomeKind.IMPROVED
            if status == "done" and verified and speedup_eager
            else OutcomeKind.FAILED
        )
    if kind is OutcomeKind.NO_IMPROVEMENT and verified and speedup_eager is None:
        kind = OutcomeKind.VERIFIED_UNMEASURED
    if kind is OutcomeKind.NO_IMPROVEMENT and not verified:
        kind = OutcomeKind.NO_VERIFIED
    return RunOutcome(
        kind,
        speedup_eager=speedup_eager,
        speedup_compile=speedup_compile,
        device=device,
        reasons=(reason,) if reason else (),
    )


def _failure_counts(counts: Mapping[str, int] | None) -> tuple[str, ...]:
    """E.g. ("3 compile_error", "2 wrong_output"): what the candidates failed on (a screened
    parameter-search configuration failed nothing)."""
    if not counts:
        return ("no candidate was evaluated",)
    failed = sorted(
        ((n, k) for k, n in counts.items() if k not in ("verified", "screened") and n), reverse=True
    )
    return tuple(f"{n} {k.replace('_', ' ')}" for n, k in failed) or ("no candidate was evaluated",)
