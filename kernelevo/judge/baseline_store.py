"""Eager and torch.compile baselines kept on disk, so a new process does not time (and compile) them again;
beside them, that a task passed its probe (judge/task_faults.py), so a new process skips it.

A baseline is a measurement of the task's reference alone, keyed by what decides it: the
task's content, size, GPU model, torch, triton, compile mode and matmul precision
(judge/timing_check.py's baseline_key). The judge measured it; the engine keeps it, in a
folder that no sandbox binds writable (the build caches are: a candidate could write a slow
baseline there to inflate its speedup), and only when the candidates ran sandboxed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from kernelevo.atomic_write import write_atomic

FORMAT = 1


def baseline_dir() -> Path:
    """`$KERNELEVO_STATE/baselines`, else `$XDG_STATE_HOME/kernelevo/baselines` (~/.local/state)."""
    root = os.environ.get("KERNELEVO_STATE")
    if root:
        base = Path(root).expanduser()
    else:
        xdg = os.environ.get("XDG_STATE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".local" / "state") / "kernelevo"
    return base / "baselines"


def _stamp(key: str) -> str:
    """The key with what else decides a timing: this file format and kernelevo's timing code."""
    from kernelevo import __version__

    return f"{FORMAT}|kernelevo {__version__}|{key}"


def _path(key: str, kind: str) -> Path:
    name = hashlib.sha256(_stamp(key).encode()).hexdigest()[:40]
    return baseline_dir() / (name + (".json" if kind == "baselines" else f".{kind}.json"))


def probe_key(session: Any) -> str | None:
    """The task probe's key (content, size, device, torch), or None where nothing may be kept: the
    candidates ran unsandboxed, so one of them could have written into this folder."""
    from kernelevo.measure.machine import probe

    if getattr(session.ev.runner, "isolation", "sandbox") == "none":
        return None
    m = probe()
    gpu = m.gpus[0] if m.gpus and session.device == "cuda" else session.device
    return f"probe|{session.task.hash}|{session.size}|{gpu}|torch {m.torch}"


def load(key: str, kind: str = "baselines") -> dict[str, Any] | None:
    """The stored record for `key`, or None (missing, unreadable, or stored under another key).
    `kind`: "baselines" (eager and torch.compile timings) or "probe" (the task passed its probe)."""
    try:
        data = json.loads(_path(key, kind).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != _stamp(key):
        return None
    base = data.get("baselines")
    if not isinstance(base, dict) or (
        kind == "baselines" and not isinstance(base.get("eager"), dict)
    ):
        return None
    return base


def save(key: str, baselines: dict[str, Any], kind: str = "baselines") -> None:
    """Written whole or not at all (a temporary file renamed into place); a failure only costs a re-timing."""
    path = _path(key, kind)
    keep = {k: v for k, v in baselines.items() if k not in ("cached", "stored")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(
            path, json.dumps({"key": _stamp(key), "saved": time.time(), "baselines": keep})
        )
    except OSError:
        pass
