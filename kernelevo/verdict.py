"""The verdict on one candidate: the record every other part of KernelEvo trusts.

It crosses process boundaries (msgpack), is stored (SQLite, as JSON) and printed
(`--json`), so it is plain data: dataclasses of str/int/float/bool/list/dict.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

STATUSES = (
    "verified",
    # a parameter-search configuration checked on one input set and timed: never proposed, never
    # cached as verified; the configuration a search keeps is verified in full
    "screened",
    "incorrect",
    "compile_error",
    "runtime_error",
    "timeout",
    "rejected",
    "unverified",
)


@dataclass
class Check:
    """One named check with its outcome; `detail` carries numbers a human or a model can act on."""

    name: str
    passed: bool
    message: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Verdict:
    status: str
    reason: str
    backend: str = "unknown"
    checks: list[Check] = field(default_factory=list)
    library_ops: list[str] = field(default_factory=list)
    kept_library_ops: list[str] = field(
        default_factory=list
    )  # GEMM/conv/attention left to cuBLAS/cuDNN
    library_split: str = (
        ""  # e.g. "keeps the cuDNN convolution; bias and ReLU fused in one Triton kernel"
    )
    kernel_launches: int = 0
    task_hash: str = ""
    candidate_hash: str = ""
    device: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    roofline: dict[str, Any] = field(default_factory=dict)
    inputs: list[list[dict[str, Any]]] = field(default_factory=list)
    phases: dict[str, Any] = field(default_factory=dict)
    log: str = ""
    elapsed_s: float = 0.0
    cached: bool = False
    isolation: str = (
        ""  # where candidate code ran: "sandbox", "none" (--no-sandbox), "" (it never ran)
    )
    worker_lost: bool = False  # a worker was taken from outside: nothing is said of the candidate

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(
                f"unknown verdict status {self.status!r}; expected one of {', '.join(STATUSES)}"
            )

    @property
    def ok(self) -> bool:
        return self.status == "verified"

    @property
    def steady_s(self) -> float:
        """The seconds it held its slot less what only a task's first verdict pays (timing the eager
        and torch.compile baselines, waiting for workers to start): what the task's next verdict
        will hold it, which is what sizing the model requests in flight needs."""
        timing = (self.timings or {}).get("phases") or {}
        first = 0.0 if timing.get("baselines_cached") else float(timing.get("baselines_s") or 0.0)
        waits = (self.phases or {}).get("worker_wait_s") or {}
        waited = sum(float(w or 0.0) for w in waits.values()) if isinstance(waits, dict) else 0.0
        return max(self.elapsed_s - first - waited, 0.0)

    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        data = dict(data)
        data["checks"] = [c if isinstance(c, Check) else Check(**c) for c in data.get("checks", [])]
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})
