"""Compile ahead: a candidate's kernels are built in a compile worker before a GPU is taken.

The dispatcher calls `precompile` while the GPU is still busy with the previous
candidate; the run worker then finds every kernel in the compile caches (Triton's,
the fast path's cubins, load_inline's build folders) and the GPU never waits for a
compiler while work is queued. A compile error found here is the verdict: the
candidate never reaches the GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevo.measure.machine import gpu_arch
from kernelevo.verdict import Check
from kernelevo.worker.cache_folders import discard
from kernelevo.worker.compile_replies import Compiled
from kernelevo.worker.compile_requests import Precompile
from kernelevo.worker.pool import WorkerError
from kernelevo.worker.protocol import ProtocolError

BUILD_TIMEOUT_S = 600.0


@dataclass
class Precompiled:
    status: str  # "compiled" | "partial" | "compile_error" | "timeout" | "skipped"
    reason: str = ""
    kernels: list[str] = field(default_factory=list)
    seconds: float = 0.0
    log: str = ""  # the compiler's whole message, for the model's feedback
    arch: int = 90  # compiled for sm_<arch>
    cache: str | None = None  # this candidate's own build caches, held out of every sandbox's reach
    launchers: list[dict[str, Any]] = field(default_factory=list)  # its Triton signatures

    @property
    def conclusive(self) -> bool:
        """True when the candidate must not go on to the GPU."""
        return self.status in ("compile_error", "timeout")

    def check(self) -> Check:
        ok = not self.conclusive
        message = {
            "compiled": f"compiled ahead for sm_{self.arch}: {', '.join(self.kernels) or 'no Triton launch'}",
            "partial": f"partly compiled ahead ({', '.join(self.kernels) or 'nothing'}): {self.reason}",
            "skipped": "not compiled ahead",
        }.get(self.status, self.reason)
        return Check(
            "compiled_ahead",
            ok,
            message,
            {"kernels": self.kernels, "seconds": round(self.seconds, 3), "status": self.status},
        )


def precompile(
    compiler: Any,
    task_path: str | Path,
    candidate: str | Path,
    backend: str,
    *,
    device: str,
    size: str,
    seed: int | None = None,
    timeout: float | None = None,
) -> Precompiled:
    """Compile the candidate's kernels in `compiler` (a compile Worker or CompilePool)."""
    arch = gpu_arch() if device == "cuda" else 90
    if backend not in ("triton", "cuda", "cuda_inline"):
        return Precompiled("skipped", arch=arch)
    limit = (
        timeout if timeout is not None else (BUILD_TIMEOUT_S if backend == "cuda_inline" else 120.0)
    )
    request = Precompile(
        task_path=str(Path(task_path).resolve()),
        candidate_path=str(Path(candidate).resolve()),
        backend=backend,
        size=size,
        seed=seed or 0,
        arch=arch,
        build_inline=device == "cuda",
    )
    try:
        reply = compiler.request(request.wire(), limit)
    except WorkerError as exc:
        if exc.kind == "timeout":
            return Precompiled(
                "timeout",
                f"time limit of {limit:.0f} s reached while compiling ahead (importing the "
                "candidate, ModelNew() and forward on meta tensors); the compile worker "
                "was stopped (infinite loop, hang, or a build that is too slow?)",
                arch=arch,
            )
        return Precompiled(
            "partial",
            f"the compile worker crashed ({exc}); compiling on the GPU worker instead",
            arch=arch,
        )
    try:
        answer = Compiled.parse(reply)
    except ProtocolError as exc:
        discard(reply.get("cache_folder"))
        return Precompiled("partial", f"compile worker: a malformed reply ({exc})", arch=arch)
    held = answer.cache_folder
    if answer.error is not None:
        return Precompiled("partial", f"compile worker: {answer.error}", arch=arch, cache=held)
    reason, log = answer.reason, ""
    if answer.status == "compile_error":
        reason, log = short_reason(reason), reason
    return Precompiled(
        answer.status,
        reason,
        list(answer.kernels),
        float(answer.seconds),
        log,
        arch,
        held,
        list(answer.launchers),
    )


_LOCATED_ERROR = re.compile(r"^\S+:\d+(:\d+)?: (fatal )?error\b")  # `cuda_sources:39: error: ...`
_COUNT_LINE = re.compile(r"^\d+ errors? detected in the compilation of")  # nvcc's closing count


def short_reason(message: str) -> str:
    """One line from a compiler's message: a C++/CUDA build's first located error (nvcc ends with
    a count of errors, which says nothing), else the last line (Triton's error itself), with
    Triton's `at L:C` location."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    if not lines:
        return "compile error"
    head = lines[0].split(":", 1)[0] if ":" in lines[0] else ""
    bare = [ln.removeprefix(f"{head}: ") if head else ln for ln in lines]
    where = next((ln.rstrip(":") for ln in bare if ln.startswith("at ") and ln[3:4].isdigit()), "")
    said = [ln for ln in lines if not _COUNT_LINE.match(ln)] or lines
    last = next((ln for ln in said if _LOCATED_ERROR.match(ln)), said[-1])
    text = last if last.startswith(head) or not head else f"{head}: {last}"
    return (f"{text} ({where})" if where else text)[:400]
