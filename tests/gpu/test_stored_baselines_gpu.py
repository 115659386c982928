"""On a GPU: the eager and torch.compile baselines one process measured are taken from disk by the
next (kernelevo/judge/baseline_store.py), and `kernelevo verify` through a warm service is judged
by the same workers each time."""

import contextlib

import pytest
from support import CANDIDATES, EXAMPLES, run_kernelevo

from kernelevo import service
from kernelevo.evaluate import Evaluator
from kernelevo.verify import verify_candidate

pytestmark = pytest.mark.gpu


def test_a_new_process_reuses_the_baselines_another_measured(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELEVO_STATE", str(tmp_path / "state"))
    task, good = EXAMPLES / "softmax.py", CANDIDATES / "softmax" / "triton_ok.py"
    verdicts = []
    for _ in range(2):
        with Evaluator("cuda") as ev:  # a fresh judge: nothing kept in memory
            verdicts.append(verify_candidate(task, good, evaluator=ev, use_cache=False))
    first, second = verdicts
    assert first.status == second.status == "verified", (first.reason, second.reason)
    assert not first.timings["phases"]["baselines_stored"]
    assert second.timings["phases"]["baselines_stored"]
    assert second.timings["eager_ms"] == first.timings["eager_ms"]
    assert second.timings["phases"]["baselines_s"] < first.timings["phases"]["baselines_s"]


def test_verify_through_the_warm_service_on_a_gpu(tmp_path, monkeypatch):
    env = {
        "KERNELEVO_RUN_DIR": str(tmp_path / "run"),
        "KERNELEVO_SERVICE": "auto",
        "KERNELEVO_STATE": str(tmp_path / "state"),
    }
    for k in ("KERNELEVO_RUN_DIR", "KERNELEVO_STATE"):  # the address the CLI computes
        monkeypatch.setenv(k, env[k])
    task, good = EXAMPLES / "softmax.py", CANDIDATES / "softmax" / "triton_ok.py"
    try:
        for _ in range(2):
            r = run_kernelevo(["verify", task, good, "--no-cache"], tmp_path, env)
            assert r.returncode == 0 and r.stdout.startswith("VERIFIED"), r.stdout + r.stderr
        assert service.request(tmp_path, "cuda", service.Ping(), 30).served == 2
    finally:
        with contextlib.suppress(service.ServiceError):
            service.request(tmp_path, "cuda", service.Stop(), 60)
