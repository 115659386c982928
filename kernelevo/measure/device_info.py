"""What a measurement was taken on: the GPU, its clocks as found, and the software versions.

Stored with every verdict, so two timings are only compared when they came from like setups.
Clocks are read (NVML, measure/gpus.py), never set. Imports torch: the language server must not import
this module.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import platform
from typing import Any

import torch

from kernelevo.measure.gpus import for_device
from kernelevo.measure.gpus import scan as scan_gpus


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def _static_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "torch": torch.__version__}
    for dist, module in (("triton", "triton"), ("cuda-bindings", "cuda.bindings")):
        if importlib.util.find_spec(module) is not None and (v := _dist_version(dist)):
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
    facts = for_device(scan_gpus().gpus, uuid, index)
    driver = facts.driver if facts else None
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
            "sm": facts.sm_clock_mhz if facts else None,
            "mem": facts.mem_clock_mhz if facts else None,
            "max_sm": facts.max_sm_clock_mhz if facts else None,
        },
        "driver": driver,
        "versions": versions(driver),
    }


def _cpu_count() -> int:
    import os

    return (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )
