"""What this machine can do, found cheaply (no torch import): GPUs (NVML), nvcc, NVRTC, Triton, keys.

Used to pick how candidates are checked (real GPU, or Triton's interpreter plus
ahead-of-time compiles) and by `kernelevo doctor`.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import os
import shutil
import subprocess
from dataclasses import dataclass, field

from kernelevo.measure.gpus import scan as scan_gpus


@dataclass
class Machine:
    gpus: list[str] = field(default_factory=list)
    driver: str = ""
    arch: int | None = None  # the first GPU's compute capability as 90, 100... (None: unknown)
    gpu_problem: str = ""  # why no GPU was found (NVML's answer), "" when one was
    nvcc: str = ""
    nvrtc: str = ""  # e.g. "nvrtc 13.0 (nvidia-cuda-nvrtc 13.0.88)"; "" without NVRTC
    triton: str = ""
    torch: str = ""
    keys: dict[str, bool] = field(default_factory=dict)

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus)


@functools.lru_cache(maxsize=1)
def probe() -> Machine:
    m = Machine()
    found = scan_gpus()
    m.gpus = [g.name for g in found.gpus]
    m.gpu_problem = found.problem
    if found.gpus:
        m.driver, m.arch = found.gpus[0].driver, found.gpus[0].arch
    nvcc = shutil.which("nvcc") or (
        "/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else ""
    )
    if nvcc:
        try:
            out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=20)
            m.nvcc = next(
                (
                    ln.split("release")[-1].split(",")[0].strip()
                    for ln in out.stdout.splitlines()
                    if "release" in ln
                ),
                "unknown",
            )
        except (OSError, subprocess.TimeoutExpired):
            pass
    from kernelevo.backends import nvrtc

    m.nvrtc = nvrtc.version() or ""
    for name in ("triton", "torch"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            setattr(m, name, importlib.metadata.version(name))
    m.keys = {k: bool(os.environ.get(k)) for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    return m


def gpu_arch() -> int:
    """The compute capability of this machine's first GPU as 90, 100...; 90 (H100/H200) without one."""
    return probe().arch or 90


def arch_env(device: str) -> dict[str, str]:
    """Both the compile and the run workers build load_inline extensions for the same arch list, or
    their content-hashed build folders would differ."""
    if device != "cuda" or os.environ.get("TORCH_CUDA_ARCH_LIST"):
        return {}
    arch = gpu_arch()
    return {"TORCH_CUDA_ARCH_LIST": f"{arch // 10}.{arch % 10}"}
