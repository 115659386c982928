"""What keeps a verdict from a fresh shell short: a one-verdict evaluator warms its judge up without
torch.compile (its baselines are usually stored), a search or the service warms it up fully."""

from __future__ import annotations

import pytest
import torch

from kernelevo.evaluate import Evaluator
from kernelevo.worker.warmup import warm_up


@pytest.mark.parametrize(("mode", "compiles"), [("1", True), ("light", False)])
def test_the_light_warm_up_skips_the_baselines(monkeypatch, mode, compiles):
    monkeypatch.setenv("KERNELEVO_WORKER_WARMUP", mode)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the GPU's request list
    asked: list[str] = []

    def handle(req):
        asked.append(req["op"])
        return {}

    warm_up(handle)
    assert asked[:4] == ["probe", "begin", "inputs", "reference"]
    assert ("baselines" in asked) is compiles


def test_a_one_verdict_evaluator_asks_its_judge_for_the_light_warm_up(monkeypatch):
    monkeypatch.delenv("KERNELEVO_WORKER_WARMUP", raising=False)
    for warmup, want in ((None, "1"), ("light", "light")):
        ev = Evaluator("cpu", **({"warmup": warmup} if warmup else {}))
        try:
            assert ev.judge.spec().env["KERNELEVO_WORKER_WARMUP"] == want
        finally:
            ev.close()


def test_the_runner_host_does_not_start_nvrtc_before_it_forks_candidates():
    """libnvrtc loads libcuda and calls cuInit: CUDA started in the host before the fork leaves
    every candidate process unable to start it, as seen on the H200 ("CUDA driver initialization
    failed" on every candidate once the host warmed NVRTC up)."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "from kernelevo.runner.host import _preload; _preload(); "
        "print('libnvrtc' in open('/proc/self/maps').read())"
    )
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": ""},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_the_service_warms_its_judge_up_lightly(tmp_path, monkeypatch):
    """The service's first call waits for its workers: they start without torch.compile."""
    from kernelevo import service

    made: list[dict] = []

    class Stop(Exception):
        pass

    def evaluator(device, **kwargs):
        made.append(kwargs)
        raise Stop

    monkeypatch.setenv("KERNELEVO_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setattr("kernelevo.evaluate.Evaluator", evaluator)
    monkeypatch.setattr("kernelevo.sandbox.probe.use_sandbox", lambda: True)
    with pytest.raises(Stop):
        service.serve(tmp_path / "ws", "cpu", idle_s=0.1)
    assert made == [{"warmup": "light"}]


def test_each_worker_start_is_timed_so_a_cold_verdict_names_the_slowest():
    import time

    from kernelevo.worker.pool import start_all

    class Slow:  # a worker that takes `s` seconds to start
        alive = False

        def __init__(self, s):
            self.s, self.start_s = s, None

        def ensure_started(self):
            time.sleep(self.s)

    fast, slow = Slow(0.01), Slow(0.3)
    start_all([fast, slow])
    assert fast.start_s < 0.2 <= slow.start_s
