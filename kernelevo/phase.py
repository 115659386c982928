"""Where in a search a candidate or a model call belongs: a seed, a model iteration, one of its
repairs, or an evaluation of the parameter search.

Stored as three columns (phase, phase_index, attempt) and shown to people as words
("iteration 4, repair 2"), never as the numbers older stores encoded them in
(seeds -1-k, tuning -1000-k, model calls iteration*100+attempt); `from_legacy` reads those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

PhaseKind = Literal["seed", "iteration", "repair", "tune"]
KINDS: tuple[PhaseKind, ...] = ("seed", "iteration", "repair", "tune")


@dataclass(frozen=True)
class Phase:
    """`index`: the seed's number, the model iteration, or the tuned parent's rank (0-based).
    `attempt`: 0 for a first answer, the repair's number (1-based) for a repair, the
    configuration's number for tuning."""

    kind: PhaseKind
    index: int
    attempt: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"phase must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if self.index < 0 or self.attempt < 0:
            raise ValueError(
                f"phase index and attempt are never negative (got {self.index}, {self.attempt})"
            )

    @classmethod
    def model(cls, iteration: int, attempt: int) -> Phase:
        """A model answer of `iteration`: the first (attempt 0) or a repair."""
        return cls("iteration" if attempt == 0 else "repair", iteration, attempt)

    @property
    def is_model(self) -> bool:
        return self.kind in ("iteration", "repair")

    def label(self) -> str:
        """For people: 'seed 3', 'iteration 4', 'iteration 4, repair 2', 'tuning 1, configuration 5'."""
        if self.kind == "seed":
            return f"seed {self.index + 1}"
        if self.kind == "tune":
            return f"tuning {self.index + 1}, configuration {self.attempt + 1}"
        if self.kind == "repair":
            return f"iteration {self.index + 1}, repair {self.attempt}"
        return f"iteration {self.index + 1}"

    def to_dict(self) -> dict[str, object]:
        return {"phase": self.kind, "phase_index": self.index, "attempt": self.attempt}

    @classmethod
    def of_row(cls, row: dict[str, object]) -> Phase:
        """The phase of a stored candidate or model call (a store row as a dict)."""
        index, attempt = row["phase_index"], row.get("attempt")
        return cls(
            cast(PhaseKind, str(row["phase"])),
            int(index) if isinstance(index, (int, str)) else 0,
            int(attempt) if isinstance(attempt, (int, str)) else 0,
        )

    @classmethod
    def from_legacy(cls, iteration: int, attempt: int = 0) -> Phase:
        """The phase an older store's `iteration` number (and the candidate's attempt) meant."""
        if iteration <= -1000:
            return cls("tune", -1000 - iteration, attempt)
        if iteration < 0:
            return cls("seed", -1 - iteration, 0)
        return cls.model(iteration, attempt)

    @classmethod
    def from_legacy_seq(cls, seq: int) -> Phase:
        """A model call's phase from an older store's `seq = iteration * 100 + attempt`."""
        return cls.model(seq // 100, seq % 100)
