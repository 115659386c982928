"""The progress event a search emits after each evaluation, one record for every reader:
`kernelevo optimize --progress json` writes it as one JSON object per line, text mode prints
its `line()`, the language server reads it from the CLI's stdout.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kernelevo.phase import Phase, PhaseKind


@dataclass(frozen=True)
class ProgressEvent:
    """`index` of `total` counts positions within the phase from 1 (seed 3 of 7, iteration 4
    of 20, configuration 5 of 12); `total` is None when the phase has no fixed length.
    `iteration` is how many model iterations have finished (never negative)."""

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
    event: str = "progress"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self, task: str | None = None) -> str:
        """One terminal line: what happened, then where the search stands."""
        best = (
            f"{self.best_speedup:.2f}x"
            if self.best_speedup
            else "verified, speed not measured"
            if self.verified
            else "none yet"
        )
        return (
            (f"{task}: " if task else "")
            + f"{self.message} · evaluated {self.evaluated} · best {best} · "
            f"{self.tokens:,} tokens · ${self.cost_usd:.2f}"
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProgressEvent:
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


def describe_step(
    phase: Phase,
    total: int | None,
    origin: str,
    status: str,
    speedup: float | None,
    repair_total: int | None = None,
) -> tuple[int, str]:
    """(1-based index, human message), e.g. 'seed 3 of 7 (template:row_softmax): verified, 1.80x'."""
    index = (phase.attempt if phase.kind == "tune" else phase.index) + 1
    of = f" of {total}" if total else ""
    if phase.kind == "seed":
        where = f"seed {index}{of}"
    elif phase.kind == "tune":
        where = f"tuning candidate {phase.index + 1}, configuration {index}{of}"
    elif phase.kind == "repair":
        where = f"iteration {index}{of}, repair {phase.attempt}" + (
            f" of {repair_total}" if repair_total else ""
        )
    else:
        where = f"iteration {index}{of}"
    outcome = status.replace("_", " ") + (f", {speedup:.2f}x" if speedup else "")
    return index, f"{where} ({origin}): {outcome}"
