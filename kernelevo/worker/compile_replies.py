"""What the compile worker answers: one typed record per request of worker/compile_requests.py
(`Precompile` → `Compiled`, `Aot` → `AotCompiled`).

The compile child builds the record and sends `wire()`; the compile worker and the pool add what
they know of the child (the leftovers swept after it, the build-cache folder held for it), and
the engine parses the frame back (verify/compile_ahead.py, verify/__init__.py). No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelevo.worker.protocol import Reply

__all__ = ["AotCompiled", "CompileAnswer", "Compiled"]


@dataclass(frozen=True)
class CompileAnswer(Reply):
    """What any compile reply may carry beside its own fields: `error`, the child raised or never
    answered (ran past its limit, ended); `integrity_violation`, harness parts the candidate
    patched; `swept`, what the child left behind and the worker removed; `cache_folder`, the
    candidate's build caches, held out of the sandbox's reach by the pool."""

    error: str | None = None
    integrity_violation: list[str] = field(default_factory=list)
    swept: list[str] = field(default_factory=list)
    cache_folder: str | None = None


@dataclass(frozen=True)
class Compiled(CompileAnswer):
    """The compile ahead of one candidate: `compile_error` is conclusive (the candidate's),
    `partial` and `compiled` leave the rest to the GPU worker."""

    status: str = "partial"
    reason: str = ""
    kernels: list[str] = field(default_factory=list)
    seconds: float = 0.0
    launchers: list[dict[str, Any]] = field(
        default_factory=list
    )  # runner/precompile.py::launcher_spec


@dataclass(frozen=True)
class AotCompiled(CompileAnswer):
    """One record per kernel the CPU interpreter saw launched: {kernel, ok, error}."""

    records: list[dict[str, Any]] = field(default_factory=list)
