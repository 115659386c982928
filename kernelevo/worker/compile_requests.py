"""What the engine may ask the compile worker: one typed record per request, defined once for both
sides (built by verify/, parsed back in the compile worker's child before it acts), each naming
its reply (worker/compile_replies.py). The pool adds `cache`, the candidate's own build-cache
folder, to each; no torch here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kernelevo.worker.compile_replies import AotCompiled, Compiled
from kernelevo.worker.protocol import Reply, Request, RequestKinds

__all__ = ["Aot", "CompileRequest", "Precompile", "parse"]


R = TypeVar("R", bound=Reply)


@dataclass(frozen=True)
class CompileRequest(Request, Generic[R]):
    """A request to the compile worker; R is the record it is answered with."""


COMPILE: RequestKinds[CompileRequest[Any]] = RequestKinds()
REQUESTS, parse = COMPILE.by_op, COMPILE.parse


@COMPILE.kind("precompile")
@dataclass(frozen=True)
class Precompile(CompileRequest[Compiled]):
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
class Aot(CompileRequest[AotCompiled]):
    """Compile ahead of time, for `arch`, the launches the CPU interpreter saw."""

    candidate_path: str
    launches: dict[str, Any] = field(default_factory=dict)
    arch: int = 90
    cache: str | None = None
