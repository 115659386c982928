"""A GPU worker's sandbox: only the NVIDIA device nodes, the GPU usable inside, pinned host memory
past the limit stopped, no daemon left behind (see also bench/sandbox_gpu_check.py)."""

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

PROBE = r"""
import json, os, sys, time
import torch
seen = {"devices": sorted(os.listdir("/dev"))}
seen["gpu_ok"] = bool(torch.ones(1 << 20, device="cuda").sum().item() == float(1 << 20))
if os.fork() == 0:
    os.setsid()
    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", "kx-gpu-sandbox-daemon"])
print(json.dumps(seen), flush=True)
pinned = [torch.empty(1 << 30, dtype=torch.uint8, pin_memory=True) for _ in range(int(sys.argv[1]))]
print(json.dumps({"pinned_gib": len(pinned)}), flush=True)
time.sleep(30)
"""


def test_a_gpu_worker_sees_only_nvidia_devices_and_cannot_pin_past_its_limit():
    from kernelevo.sandbox import spawn
    from kernelevo.worker.pool import Worker

    w = Worker("cuda")
    spec = w.spec()
    limit_gib = 6
    spec = dataclasses.replace(
        spec,
        argv=[sys.executable, "-c", PROBE, str(2 * limit_gib)],
        limits=dataclasses.replace(spec.limits, memory_bytes=limit_gib << 30),
    )
    proc = spawn(spec, channel=False)
    try:
        proc.wait(timeout=120)
    finally:
        proc.close()
        w.inbox.remove()
    reports = [json.loads(line) for line in proc.output.text().splitlines() if line.startswith("{")]
    seen = reports[0]
    assert seen["gpu_ok"]
    standard = {
        "core",
        "fd",
        "full",
        "null",
        "ptmx",
        "pts",
        "random",
        "shm",
        "stderr",
        "stdin",
        "stdout",
        "tty",
        "urandom",
        "zero",
    }
    assert {d for d in seen["devices"] if not d.startswith("nvidia")} <= standard
    assert "nvidiactl" in seen["devices"] and any(
        d.startswith("nvidia") and d[6:].isdigit() for d in seen["devices"]
    )
    assert all("pinned_gib" not in r for r in reports), "pinned host memory went past the limit"
    assert proc.stopped_for.startswith("more than") or "cgroup" in " ".join(proc.cgroup.controls)
    daemons = [
        p for p in os.listdir("/proc") if p.isdigit() and b"kx-gpu-sandbox-daemon" in _cmdline(p)
    ]
    assert daemons == []


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
