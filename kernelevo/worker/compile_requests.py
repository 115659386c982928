"""What the engine may ask the compile worker: one typed record per request, defined once for both
sides (built by verify/, parsed back in the compile worker's child before it acts). The pool adds
`cache`, the candidate's own build-cache folder, to each; no torch here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelevo.worker.protocol import Request, RequestKinds

__all__ = ["Aot", "CompileRequest", "Precompile", "parse"]


@dataclass(frozen=True)
class CompileRequest(Request):
    pass


COMPILE: RequestKinds[CompileRequest] = RequestKinds()
REQUESTS, parse = COMPILE.by_op, COMPILE.parse


@COMPILE.kind("precompile")
@dataclass(frozen=True)
class Precompile(CompileRequest):
    """Import the candidate, build ModelNew and run forward on meta tensors, compiling its kernels
    for `arch` (and, with `build_inline`, building its inline extension)."""

    task_path: str
    candidate_path: str
    backend: str = "triton"
    size: str = "default"
    seed: int = 0
    arch: int = 90
    build_inline: bool = False
    cache: str | None = None


@COMPILE.kind("aot")
@dataclass(frozen=True)
class Aot(CompileRequest):
    """Compile ahead of time, for `arch`, the launches the CPU interpreter saw."""

    candidate_path: str
    launches: dict[str, Any] = field(default_factory=dict)
    arch: int = 90
    cache: str | None = None
