"""The machine probe reads the GPU list, driver and compute capability from one nvidia-smi query,
and still finds the GPUs with a driver too old to know `compute_cap`."""

import os
import stat

import pytest

from kernelevo.measure import machine

FAKE = """#!/bin/sh
case "$1" in
  *compute_cap*) {new} ;;
  *) echo "NVIDIA H200, 580.159.04"; echo "NVIDIA H200, 580.159.04" ;;
esac
"""


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    def install(new: str) -> None:
        smi = tmp_path / "nvidia-smi"
        smi.write_text(FAKE.format(new=new))
        smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.delenv("KERNELEVO_FORCE_CPU", raising=False)
        machine.probe.cache_clear()

    yield install
    machine.probe.cache_clear()


def test_compute_capability_with_the_gpus(fake_smi):
    fake_smi('echo "NVIDIA H200, 580.159.04, 9.0"; echo "NVIDIA H200, 580.159.04, 9.0"')
    m = machine.probe()
    assert m.gpus == ["NVIDIA H200", "NVIDIA H200"] and m.driver == "580.159.04" and m.arch == 90


def test_old_driver_without_compute_cap_still_finds_the_gpus(fake_smi):
    fake_smi('echo "Field \\"compute_cap\\" is not a valid field to query." >&2; exit 2')
    m = machine.probe()
    assert m.gpus == ["NVIDIA H200", "NVIDIA H200"] and m.driver == "580.159.04" and m.arch is None
