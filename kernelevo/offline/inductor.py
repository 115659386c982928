"""Compiler-seeded candidates: Inductor's Triton kernels for a task, as a standalone candidate.

torch.compile is heavy and patches process state, so it runs in a child process
(`inductor_capture.py`); this module only starts it and rewrites what it captured.
On a machine without a GPU the extraction uses Inductor's Triton backend for CPU
tensors (`device="cpu"`), whose kernels then run under TRITON_INTERPRET=1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelevo.offline.inductor_rewrite import NotExtractable, rewrite

__all__ = [
    "InductorResult",
    "NotExtractable",
    "capture_inductor",
    "extract_inductor",
    "inductor_candidate",
    "rewrite",
]


@dataclass
class InductorResult:
    source: str | None  # the candidate, or None
    reason: str | None  # why there is no candidate
    detail: str = ""  # child traceback tail, for logs
    note: str = ""  # on a GPU: kernels launched with Inductor's first configuration, and why


def first_config_note(captured: dict[str, Any]) -> str:
    """On a GPU, the kernels whose launch is Inductor's first listed configuration instead of the
    one its benchmark kept (inductor_capture.py records why per kernel); "" when none is."""
    if captured.get("device") != "cuda":
        return ""
    why = {
        name: info["chosen_note"]
        for variant in captured.get("variants", [])
        for name, info in variant.get("kernels", {}).items()
        if info.get("chosen_note") and "chosen" not in info
    }
    if not why:
        return ""
    name, reason = next(iter(why.items()))
    more = f" and {len(why) - 1} more" if len(why) > 1 else ""
    return f"{name}{more} launched with Inductor's first listed configuration: {reason}"


def capture_inductor(
    task_path: str | Path, *, device: str = "cuda", size: str = "default", timeout_s: float = 600.0
) -> dict[str, Any]:
    """What Inductor generated for the task (inductor_capture.py's JSON, with "ok" and "reason")."""
    if device not in ("cpu", "cuda"):
        return {"ok": False, "reason": f"device {device!r}: use 'cpu' or 'cuda'"}
    with tempfile.TemporaryDirectory(prefix="kernelevo_inductor_") as tmp:
        out = Path(tmp) / "captured.json"
        env = dict(os.environ)
        env.pop("TRITON_INTERPRET", None)
        env["TORCHINDUCTOR_CACHE_DIR"] = str(Path(tmp) / "inductor_cache")
        cmd = [
            sys.executable,
            "-m",
            "kernelevo.offline.inductor_capture",
            str(Path(task_path).resolve()),
            device,
            size,
            str(out),
        ]
        try:
            proc = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env=env,
                cwd=str(Path(__file__).resolve().parents[2]),
            )
        except subprocess.TimeoutExpired:
            return {"ok": False, "reason": f"torch.compile did not finish within {timeout_s:.0f} s"}
        if not out.exists():
            return {
                "ok": False,
                "reason": f"the extraction process failed (exit {proc.returncode})",
                "traceback": proc.stderr[-3000:],
            }
        return json.loads(out.read_text())


def extract_inductor(
    task_path: str | Path, *, device: str = "cuda", size: str = "default", timeout_s: float = 600.0
) -> InductorResult:
    """Never raises for a task that cannot be extracted: the reason comes back instead."""
    captured = capture_inductor(task_path, device=device, size=size, timeout_s=timeout_s)
    if not captured.get("ok"):
        return InductorResult(
            None, captured.get("reason", "unknown failure"), captured.get("traceback", "")
        )
    try:
        return InductorResult(rewrite(captured), None, note=first_config_note(captured))
    except NotExtractable as exc:
        return InductorResult(None, f"not extractable: {exc}")


def inductor_candidate(
    task_path: str | Path, *, device: str = "cuda", size: str = "default", timeout_s: float = 600.0
) -> str:
    """Candidate source built from Inductor's kernels; raises NotExtractable with the reason."""
    result = extract_inductor(task_path, device=device, size=size, timeout_s=timeout_s)
    if result.source is None:
        raise NotExtractable(result.reason or "unknown failure")
    return result.source
