"""Output shared by the benchmarks in bench/: a plain-text table, goal lines, and a JSON file.

JSON goes to `--out` when given, else to `$OUT/<name>.json` when $OUT is set (the GPU
machine collects that folder), else nowhere.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    from kernelevo.cli.table import render

    return "\n".join(render([list(headers), *[[_cell(v) for v in row] for row in rows]], rule=True))


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


def goal(name: str, passed: bool | None, detail: str) -> dict[str, Any]:
    """Print one goal line (PASS/FAIL/n/a) and return it for the JSON report."""
    word = "n/a " if passed is None else ("PASS" if passed else "FAIL")
    print(f"GOAL {word} {name}: {detail}", flush=True)
    return {"goal": name, "passed": passed, "detail": detail}


def p50(xs: Sequence[float]) -> float | None:
    return statistics.median(xs) if xs else None


def environment() -> dict[str, Any]:
    """Versions and GPU, found without importing torch in this process (NVML, package metadata)."""
    from kernelevo.measure.machine import probe

    m = probe()
    return {
        "python": platform.python_version(),
        "host": platform.node(),
        "time": time.time(),
        "torch": m.torch,
        "triton": m.triton,
        "nvcc": m.nvcc,
        "nvrtc": m.nvrtc,
        "driver": m.driver,
        "gpus": m.gpus,
    }


def write_json(name: str, data: dict[str, Any], out: str | None) -> Path | None:
    if out:
        path = Path(out)
    elif os.environ.get("OUT"):
        path = Path(os.environ["OUT"]) / f"{name}.json"
    else:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=str))
    print(f"wrote {path}", file=sys.stderr)
    return path
