"""The records the results store keeps: a run, and the summary of its best verified result."""

from __future__ import annotations

import json
import sqlite3
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelevo.outcome import RunOutcome


@dataclass
class ResultSummary:
    """What the editor shows for a target: the best verified result of one run."""

    run_id: str
    source_file: str
    target_id: str
    status: str
    backend: str = ""
    gpu: str = ""
    created_at: float = 0.0
    reference_ms: float | None = None
    compile_ms: float | None = None
    best_ms: float | None = None
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    achieved_gbps: float | None = None
    achieved_tflops: float | None = None
    roofline_fraction: float | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    verified: bool = False
    candidate_path: str = ""
    outcome: dict[str, Any] = field(default_factory=dict)  # RunOutcome.to_dict() of the run
    kept_library_ops: list[str] = field(default_factory=list)  # the best verdict's, if any
    library_split: str = ""  # the best verdict's sentence on what it keeps and what it fuses
    # A candidate that failed the fp32 bounds but passed a looser level's (its verdict's
    # "precision" check): {"level": "tf32", "rel_l2": 6.5e-4, "message": ...}; empty if none.
    precision_offer: dict[str, Any] = field(default_factory=dict)

    def run_outcome(self) -> RunOutcome:
        """The run's outcome as the engine judged it (older rows: rebuilt from their status)."""
        from kernelevo.outcome import RunOutcome, from_status

        if self.outcome.get("kind"):
            return RunOutcome.from_dict(self.outcome)
        return from_status(
            self.status,
            verified=self.verified,
            speedup_eager=self.speedup_eager,
            speedup_compile=self.speedup_compile,
            device="cuda" if self.gpu and "cpu" not in self.gpu.lower() else "cpu",
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResultSummary:
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class RunRecord:
    id: str
    created_at: float
    updated_at: float
    task_path: str
    task_hash: str
    source_file: str
    target_id: str
    source_hash: str
    status: str
    config: dict[str, Any]
    summary: dict[str, Any]


def run_record(row: sqlite3.Row) -> RunRecord:
    d = dict(row)
    return RunRecord(
        id=d["id"],
        created_at=d["created_at"],
        updated_at=d["updated_at"],
        task_path=d["task_path"],
        task_hash=d["task_hash"],
        source_file=d["source_file"] or "",
        target_id=d["target_id"] or "",
        source_hash=d["source_hash"] or "",
        status=d["status"],
        config=stored_json(d["config_json"], f"run {d['id']}'s configuration"),
        summary=stored_json(d["summary_json"], f"run {d['id']}'s summary"),
    )


def stored_json(text: str | None, what: str) -> dict[str, Any]:
    """A JSON object read back from the store; one damaged value (an edit, a crash mid-write of
    another tool) is read as empty with a warning, so it does not hide every other record."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        print(
            f"kernelevo: warning: {what} in the store is damaged; it is read as empty",
            file=sys.stderr,
        )
        return {}
    return value if isinstance(value, dict) else {}
