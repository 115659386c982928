"""The GPUs of this machine and their facts, from NVML (`nvidia-ml-py`, imported as `pynvml`):
name, UUID, driver, compute capability, clocks and utilisation, read in microseconds through the
driver's own library, without torch and without starting `nvidia-smi` and parsing its CSV.

Without NVML (no NVIDIA driver library, no package) or with `KERNELEVO_FORCE_CPU=1` no GPU is
found, and `scan().problem` says why. NVML's index is nvidia-smi's (PCI bus order), which
`--gpus` and `CUDA_VISIBLE_DEVICES` use; clocks are read, never set.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class GpuFacts:
    """One GPU as NVML reports it; a fact NVML cannot read on this driver or GPU is None."""

    index: int
    uuid: str  # "GPU-8f3c..."
    name: str  # "NVIDIA H200"
    driver: str  # "580.95.05"
    compute_capability: tuple[int, int] | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    memory_gib: float | None = None  # the device's total, as NVML reports it

    @property
    def arch(self) -> int | None:
        """The compute capability as 90, 100...; None where NVML cannot say."""
        cc = self.compute_capability
        return cc[0] * 10 + cc[1] if cc else None

    def same_uuid(self, uuid: str | None) -> bool:
        """torch writes the UUID without the "GPU-" prefix, NVML with it; either matches."""
        if not uuid:
            return False
        return self.uuid.lower().removeprefix("gpu-") == uuid.lower().removeprefix("gpu-")


@dataclass(frozen=True)
class GpuScan:
    gpus: list[GpuFacts] = field(default_factory=list)
    problem: str = ""  # why no GPU was found ("" when NVML answered)


def scan() -> GpuScan:
    """Every GPU NVML sees, in its index order; none, with the reason, where NVML cannot run."""
    if os.environ.get("KERNELEVO_FORCE_CPU") == "1":
        return GpuScan(problem="KERNELEVO_FORCE_CPU=1")
    try:
        with _Nvml() as nvml:
            driver = _text(nvml.nvmlSystemGetDriverVersion())
            return GpuScan([_facts(nvml, i, driver) for i in range(nvml.nvmlDeviceGetCount())])
    except _NvmlUnavailable as e:
        return GpuScan(problem=str(e))


@functools.lru_cache(maxsize=1)
def default_device() -> str:
    """The device to use by default: "cuda" where NVML sees a GPU. Only the scan, not the
    machine's whole probe (compilers, versions): the CLI asks this before it reaches a warm
    verification service."""
    return "cuda" if scan().gpus else "cpu"


def gpus() -> list[GpuFacts]:
    return scan().gpus


def for_device(found: list[GpuFacts], uuid: str | None, index: int) -> GpuFacts | None:
    """The GPU a torch device is: by UUID (CUDA_VISIBLE_DEVICES renumbers devices), else the only
    one, else by index."""
    for g in found:
        if g.same_uuid(uuid):
            return g
    if len(found) == 1:
        return found[0]
    return next((g for g in found if g.index == index), None)


def utilization_samples(index: int, every_s: float, stop: threading.Event) -> Iterator[float]:
    """How busy GPU `index` is (a kernel executing, 0-100, NVML's running sample) every `every_s`
    seconds until `stop` is set, in one NVML session; nothing without NVML."""
    try:
        with _Nvml() as nvml:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            while not stop.is_set():
                yield float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                stop.wait(every_s)
    except _NvmlUnavailable:
        return


class _NvmlUnavailable(Exception):
    pass


class _Nvml:
    """nvmlInit ... nvmlShutdown around one set of queries, every NVML failure as one error."""

    def __enter__(self) -> Any:
        try:
            import pynvml
        except ImportError:
            raise _NvmlUnavailable("NVML: nvidia-ml-py is not installed") from None
        self.nvml = pynvml
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as e:
            raise _NvmlUnavailable(f"NVML: {e}") from None
        return pynvml

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        with contextlib.suppress(self.nvml.NVMLError):
            self.nvml.nvmlShutdown()
        if isinstance(exc, self.nvml.NVMLError):
            raise _NvmlUnavailable(f"NVML: {exc}") from None


def _facts(nvml: Any, index: int, driver: str) -> GpuFacts:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)

    def read(query: Callable[[], T]) -> T | None:
        try:
            return query()
        except nvml.NVMLError:  # not supported on this GPU or driver
            return None

    cc = read(lambda: nvml.nvmlDeviceGetCudaComputeCapability(handle))
    return GpuFacts(
        index=index,
        uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
        name=_text(nvml.nvmlDeviceGetName(handle)),
        driver=driver,
        compute_capability=(int(cc[0]), int(cc[1])) if cc else None,
        sm_clock_mhz=read(lambda: int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))),
        mem_clock_mhz=read(lambda: int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM))),
        max_sm_clock_mhz=read(
            lambda: int(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM))
        ),
        memory_gib=read(lambda: nvml.nvmlDeviceGetMemoryInfo(handle).total / 2**30),
    )


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
