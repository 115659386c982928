"""The two ceilings a kernel is judged against, measured on the device itself, once.

Datasheet figures are not what a card delivers; a large device-to-device copy (bytes read plus
written) and a large cuBLAS GEMM are. Measured once per (GPU, driver, torch) and cached as
JSON under $KERNELEVO_CACHE or ~/.cache/kernelevo.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from kernelevo.atomic_write import write_atomic
from kernelevo.measure.device_info import device_info
from kernelevo.measure.precision import fp32_matmul

CACHE_FILE = "device_peaks.json"


@dataclass
class DevicePeaks:
    copy_gbps: float  # device-to-device copy, read + write bytes
    bf16_tflops: float  # dense GEMM
    fp32_tflops: float  # dense GEMM without TF32
    key: str
    quick: bool = False
    measured_at: float = 0.0
    detail: dict[str, Any] | None = None  # sizes and repeat counts behind the numbers

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cache_dir() -> Path:
    env = os.environ.get("KERNELEVO_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "kernelevo"


def peaks_key(info: dict[str, Any], quick: bool = False) -> str:
    key = f"{info.get('name')}|driver {info.get('driver')}|torch {info.get('versions', {}).get('torch')}"
    return key + ("|quick" if quick else "")


def load_cached(key: str, directory: Path | None = None) -> DevicePeaks | None:
    path = (directory or cache_dir()) / CACHE_FILE
    try:
        data = json.loads(path.read_text())
        return DevicePeaks(**data[key])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(peaks: DevicePeaks, directory: Path | None = None) -> Path:
    """Merge into the cache file; written to a temp file and renamed so readers never see half."""
    directory = directory or cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CACHE_FILE
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    data[peaks.key] = peaks.to_dict()
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True))
    return path


def _median_event_ms(fn: Callable[[], Any], reps: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def measure_copy_gbps(device: int, nbytes: int, reps: int) -> float:
    src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=f"cuda:{device}")
    dst = torch.empty_like(src)
    ms = _median_event_ms(lambda: dst.copy_(src), reps)
    return 2 * nbytes / (ms / 1e3) / 1e9


def measure_gemm_tflops(device: int, n: int, dtype: torch.dtype, reps: int) -> float:
    with fp32_matmul(tf32=False):
        a = torch.randn(n, n, dtype=dtype, device=f"cuda:{device}")
        b = torch.randn(n, n, dtype=dtype, device=f"cuda:{device}")
        c = torch.empty(n, n, dtype=dtype, device=f"cuda:{device}")
        ms = _median_event_ms(lambda: torch.mm(a, b, out=c), reps)
    return 2 * n**3 / (ms / 1e3) / 1e12


def measure_peaks(device: int | None = None, *, quick: bool = False) -> DevicePeaks | None:
    """Measure now (about a second; quick mode for tests). None without CUDA."""
    if not torch.cuda.is_available():
        return None
    index = torch.cuda.current_device() if device is None else device
    info = device_info(index)
    copy_bytes = (512 if quick else 2048) * 1024 * 1024
    n_bf16, n_fp32 = (4096, 2048) if quick else (8192, 8192)
    reps = 5 if quick else 20
    with torch.cuda.device(index):
        copy = measure_copy_gbps(index, copy_bytes, reps)
        bf16 = measure_gemm_tflops(index, n_bf16, torch.bfloat16, reps)
        fp32 = measure_gemm_tflops(index, n_fp32, torch.float32, max(3, reps // 4))
        torch.cuda.empty_cache()
    return DevicePeaks(
        copy_gbps=copy,
        bf16_tflops=bf16,
        fp32_tflops=fp32,
        key=peaks_key(info, quick),
        quick=quick,
        measured_at=time.time(),
        detail={
            "copy_bytes": copy_bytes,
            "gemm_n_bf16": n_bf16,
            "gemm_n_fp32": n_fp32,
            "reps": reps,
            "clocks_mhz": info.get("clocks_mhz"),
        },
    )


def get_peaks(
    device: int | None = None,
    *,
    quick: bool = False,
    refresh: bool = False,
    directory: Path | None = None,
) -> DevicePeaks | None:
    """Cached peaks for this device, measuring them on first use. None without CUDA."""
    if not torch.cuda.is_available():
        return None
    index = torch.cuda.current_device() if device is None else device
    key = peaks_key(device_info(index), quick)
    if not refresh and (cached := load_cached(key, directory)) is not None:
        return cached
    peaks = measure_peaks(index, quick=quick)
    if peaks is not None:
        store(peaks, directory)
    return peaks
