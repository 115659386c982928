"""How a candidate's failure is told from inside its process: a status and a reason that points
at the candidate's own line, the traceback trimmed to its frames, and whether (and by how much)
it ran out of memory, which the judge reads as the size of the task, not the kernel's fault.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

import torch


class CandidateFailure(Exception):
    def __init__(self, status: str, reason: str, log: str = "") -> None:
        super().__init__(reason)
        self.status, self.reason, self.log = status, reason, log

    def to_dict(self) -> dict[str, Any]:
        return {"failure": {"status": self.status, "reason": self.reason, "log": self.log[-3000:]}}


def trim_traceback(exc: BaseException, keep: str | None = None, limit: int = 3000) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    text = "".join(lines)
    if keep:
        frames = [ln for ln in lines if keep in ln or not ln.startswith("  File")]
        text = "".join(frames) if frames else text
    return text[-limit:]


def location(exc: BaseException, path: str) -> str:
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if os.path.realpath(frame.filename) == os.path.realpath(path):
            return f"{path}:{frame.lineno}"
    return str(path)


def out_of_memory(exc: BaseException) -> bool:
    text = str(exc).lower()
    return (
        isinstance(exc, torch.OutOfMemoryError)
        or "out of memory" in text
        or "can't allocate memory" in text
    )


# What torch and Triton say when code asks for a GPU on a machine without one
NO_GPU_SAID = (
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver",
    "No CUDA GPUs are available",
    "0 active drivers",
)


def needs_a_gpu(exc: BaseException, device: torch.device) -> bool:
    """A candidate that asks for CUDA while judged on the CPU is not wrong: it cannot run here."""
    return device.type == "cpu" and any(said in str(exc) for said in NO_GPU_SAID)


def requested_gib(message: str) -> float | None:
    """The allocation that failed, from torch's CPU ("allocate N bytes") or CUDA ("Tried to allocate 2.00 GiB") text."""
    import re

    m = re.search(r"allocate (\d+) bytes", message)
    if m:
        return int(m.group(1)) / float(1 << 30)
    m = re.search(r"[Tt]ried to allocate ([\d.]+) (GiB|MiB|KiB)", message)
    if m:
        return float(m.group(1)) / {"GiB": 1, "MiB": 1024, "KiB": 1024 * 1024}[m.group(2)]
    return None
