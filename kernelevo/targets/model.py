"""Records for what KernelEvo can optimise in a user's file (see docs/PROTOCOLS.md, Target).

Plain data: they cross into the language server and are printed as JSON, so no torch,
no AST nodes, only str/int/list.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Self

KINDS = ("module", "function", "triton_kernel", "triton_launcher", "cuda_inline", "cuda_file")


@dataclass
class Target:
    id: str
    kind: str
    name: str
    qualname: str
    path: str
    start_line: int
    start_col: int
    end_line: int
    end_col: int
    ops: list[str] = field(default_factory=list)
    source_hash: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(
                f"unknown target kind {self.kind!r}; expected one of {', '.join(KINDS)}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})

    def location(self) -> str:
        """`path:line` (1-based, for humans and error messages)."""
        return f"{self.path}:{self.start_line + 1}"


@dataclass
class Detection:
    path: str
    targets: list[Target] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "targets": [t.to_dict() for t in self.targets],
            "errors": list(self.errors),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Detection:
        return cls(
            path=data.get("path", ""),
            targets=[Target.from_dict(t) for t in data.get("targets", [])],
            errors=list(data.get("errors", [])),
        )

    def find(self, key: str) -> Target | None:
        """A target by id, qualname or name (in that order of preference)."""
        for attr in ("id", "qualname", "name"):
            hits = [t for t in self.targets if getattr(t, attr) == key]
            if hits:
                return hits[0]
        return None
