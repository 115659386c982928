"""What a measurement was taken on: the GPU, its clocks as found, and the software versions.

Stored with every verdict, so two timings are only compared when they came from like setups.
Clocks are read (nvidia-smi), never set. Imports torch: the language server must not import
this module.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import platform
import shutil
import subprocess
from typing import Any

import torch

_SMI_FIELDS = ("uuid", "index", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm")


def parse_smi_csv(text: str) -> list[dict[str, str]]:
    """Rows of `nvidia-smi --query-gpu=<_SMI_FIELDS> --format=csv,noheader,nounits`."""
    rows = []
    for line in text.strip().splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == len(_SMI_FIELDS):
            rows.append(dict(zip(_SMI_FIELDS, cells, strict=True)))
    return rows


def _smi_rows() -> list[dict[str, str]]:
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        res = subprocess.run(
            ["nvidia-smi", "--query-gpu=" + ",".join(_SMI_FIELDS), "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_smi_csv(res.stdout) if res.returncode == 0 else []


def _mhz(value: str | None) -> int | None:
    try:
        return int(float(value)) if value else None
    except ValueError:  # "[N/A]"
        return None


def smi_row_for(rows: list[dict[str, str]], uuid: str | None, index: int) -> dict[str, str] | None:
    """nvidia-smi's row for a torch device: by UUID (CUDA_VISIBLE_DEVICES renumbers), else index."""
    if uuid:
        u = uuid.lower().removeprefix("gpu-")
        for row in rows:
            if row.get("uuid", "").lower().removeprefix("gpu-") == u:
                return row
    if len(rows) == 1:
        return rows[0]
    for row in rows:
        if row.get("index") == str(index):
            return row
    return None


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def _static_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "torch": torch.__version__}
    for dist in ("triton", "pycuda"):
        if importlib.util.find_spec(dist) is not None and (v := _dist_version(dist)):
            out[dist] = v
    if torch.version.cuda:
        out["cuda_runtime"] = torch.version.cuda
    return out


def versions(driver: str | None = None) -> dict[str, str]:
    out = dict(_static_versions())
    if driver:
        out["driver"] = driver
    return out


def device_info(device: Any = None) -> dict[str, Any]:
    """A plain dict describing `device` (default: the current CUDA device, else the CPU)."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    if dev.type != "cuda" or not torch.cuda.is_available():
        return {
            "device": "cpu",
            "name": platform.processor() or platform.machine(),
            "cpu_count": _cpu_count(),
            "versions": versions(),
        }
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    uuid = str(getattr(props, "uuid", "") or "")
    row = smi_row_for(_smi_rows(), uuid, index) or {}
    driver = row.get("driver_version")
    return {
        "device": "cuda",
        "index": index,
        "name": props.name,
        "uuid": uuid,
        "sm_count": props.multi_processor_count,
        "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0),
        "compute_capability": f"{props.major}.{props.minor}",
        "memory_bytes": int(props.total_memory),
        "clocks_mhz": {
            "sm": _mhz(row.get("clocks.sm")),
            "mem": _mhz(row.get("clocks.mem")),
            "max_sm": _mhz(row.get("clocks.max.sm")),
        },
        "driver": driver,
        "versions": versions(driver),
    }


def _cpu_count() -> int:
    import os

    return (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )
