"""GPU facts from NVML (measure/gpus.py) and what reads them (the machine probe, doctor, the
GPU dispatcher): without an NVML library no GPU is found and the reason is given; with one (the
stand-in in tests/fakes/nvml, loaded by the real nvidia-ml-py) the GPUs, driver, compute
capability and clocks come from it, also from a driver too old to report the compute capability."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.nvml import build_fake_nvml

from kernelevo.measure import gpus, machine

ROOT = Path(__file__).resolve().parents[1]


def _has_nvml() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
        return True
    except OSError:
        return False


@pytest.fixture
def fake_nvml(tmp_path):
    lib = build_fake_nvml(tmp_path)
    if lib is None:
        pytest.skip("no C compiler to build the stand-in NVML library")
    return lib


def run_with(lib: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "LD_LIBRARY_PATH": str(lib), "PYTHONPATH": str(ROOT), **env}
    full.pop("KERNELEVO_FORCE_CPU", None)
    for name, value in env.items():
        if value == "":
            full.pop(name)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=full
    )


@pytest.mark.skipif(_has_nvml(), reason="this machine has an NVML library")
def test_without_nvml_no_gpu_is_found_and_the_reason_is_given(monkeypatch):
    monkeypatch.delenv("KERNELEVO_FORCE_CPU", raising=False)
    found = gpus.scan()
    assert found.gpus == [] and found.problem.startswith("NVML: ")
    machine.probe.cache_clear()
    try:
        m = machine.probe()
        assert m.gpus == [] and not m.has_gpu and m.driver == "" and m.arch is None
        assert m.gpu_problem == found.problem
    finally:
        machine.probe.cache_clear()


def test_force_cpu_finds_no_gpu(monkeypatch):
    monkeypatch.setenv("KERNELEVO_FORCE_CPU", "1")
    assert gpus.scan() == gpus.GpuScan(problem="KERNELEVO_FORCE_CPU=1")


def test_the_gpus_their_driver_compute_capability_and_clocks_come_from_nvml(fake_nvml):
    code = (
        "import json, dataclasses\n"
        "from kernelevo.measure import gpus, machine\n"
        "m = machine.probe()\n"
        "print(json.dumps([[dataclasses.asdict(g) for g in gpus.gpus()], m.gpus, m.driver, m.arch]))\n"
    )
    out = run_with(fake_nvml, code)
    found, names, driver, arch = json.loads(out.stdout)
    assert [g["uuid"] for g in found] == [
        "GPU-1111aaaa-0000-0000-0000-000000000000",
        "GPU-2222bbbb-0000-0000-0000-000000000000",
    ], out.stderr
    assert found[1] | {"uuid": ""} == {
        "index": 1,
        "uuid": "",
        "name": "NVIDIA H200",
        "driver": "580.95.05",
        "compute_capability": [9, 0],
        "sm_clock_mhz": 345,
        "mem_clock_mhz": 3201,
        "max_sm_clock_mhz": 1980,
        "memory_gib": 143771 / 1024,
    }
    assert (names, driver, arch) == (["NVIDIA H200", "NVIDIA H200"], "580.95.05", 90)


def test_a_driver_without_compute_capability_still_finds_the_gpus(fake_nvml):
    code = "from kernelevo.measure import machine\nm = machine.probe()\nprint(m.gpus, m.arch)\n"
    out = run_with(fake_nvml, code, FAKE_NVML_NO_COMPUTE_CAP="1")
    assert out.stdout.strip() == "['NVIDIA H200', 'NVIDIA H200'] None", out.stderr


def test_a_driver_not_loaded_is_no_gpu_and_doctor_says_why(fake_nvml):
    code = "from kernelevo.cli import main\nmain(['doctor'])\n"
    out = run_with(fake_nvml, code, FAKE_NVML_DRIVER_NOT_LOADED="1")
    assert "GPU:                none found (NVML: Driver Not Loaded)" in out.stdout, out.stderr


def test_the_dispatcher_picks_gpus_by_nvml_index_and_uuid(fake_nvml):
    code = (
        "from kernelevo.dispatch.local import visible_gpus\n"
        "from kernelevo.dispatch.slots import DispatchError\n"
        "print(visible_gpus(), visible_gpus([1]))\n"
        "try:\n    visible_gpus([5])\nexcept DispatchError as e:\n    print(e)\n"
    )
    out = run_with(fake_nvml, code, CUDA_VISIBLE_DEVICES="")
    lines = out.stdout.splitlines()
    assert lines == [
        "[(0, 'NVIDIA H200'), (1, 'NVIDIA H200')] [(1, 'NVIDIA H200')]",
        "--gpus 5: no GPU 5 here (NVML lists: 0, 1)",
    ], out.stderr
    out = run_with(
        fake_nvml,
        code.splitlines()[0] + "\nprint(visible_gpus())\n",
        CUDA_VISIBLE_DEVICES="1,GPU-1111aaaa,bogus,0",
    )
    assert out.stdout.strip() == "[(1, 'NVIDIA H200'), ('GPU-1111aaaa', 'NVIDIA H200')]", out.stderr


def test_a_gpu_search_gets_slots_from_the_gpus_memory_and_the_cores(fake_nvml):
    """Two H200s (140 GiB each) on 16 cores: 8 slots each by memory, 4 by cores; 2 a GPU where
    NVML cannot say how much memory the GPU has."""
    code = (
        "from unittest import mock\n"
        "from kernelevo.dispatch.local import LocalDispatcher\n"
        "with mock.patch('os.cpu_count', return_value=16):\n"
        "    for gpus in ([0], [0, 1]):\n"
        "        d = LocalDispatcher('cuda', gpus=gpus, slots_per_gpu=None)\n"
        "        print(d.slots_per_gpu, len(list(d.pool)))\n"
        "        d.close()\n"
    )
    out = run_with(fake_nvml, code, CUDA_VISIBLE_DEVICES="")
    assert out.stdout.split() == ["8", "8", "4", "8"], out.stderr
    out = run_with(fake_nvml, code, CUDA_VISIBLE_DEVICES="", FAKE_NVML_NO_MEMORY="1")
    assert out.stdout.split() == ["2", "2", "2", "4"], out.stderr
    by_uuid = code.replace("gpus in ([0], [0, 1])", "gpus in (None,)")
    out = run_with(fake_nvml, by_uuid, CUDA_VISIBLE_DEVICES="GPU-2222bbbb")  # a GPU named by UUID
    assert out.stdout.split() == ["8", "8"], out.stderr


def test_utilization_is_sampled_in_one_session(fake_nvml):
    code = (
        "import threading\nfrom kernelevo.measure.gpus import utilization_samples\n"
        "stop = threading.Event(); seen = []\n"
        "for u in utilization_samples(0, 0.01, stop):\n"
        "    seen.append(u)\n"
        "    if len(seen) == 3: stop.set()\n"
        "print(seen, list(utilization_samples(7, 0.01, threading.Event())))\n"
    )
    out = run_with(fake_nvml, code)
    assert out.stdout.strip() == "[37.0, 37.0, 37.0] []", out.stderr
