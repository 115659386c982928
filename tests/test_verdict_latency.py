"""What keeps a verdict from a fresh shell short: a one-verdict evaluator warms its judge up without
torch.compile (its baselines are usually stored), a search or the service warms it up fully."""

from __future__ import annotations

import json

import pytest
import torch

from kernelevo.evaluate import Evaluator
from kernelevo.judge.warmup import warm_up


@pytest.mark.parametrize(
    ("mode", "first", "compiles"),
    [
        ("1", ["probe", "begin", "inputs", "reference"], True),
        ("light", ["begin", "inputs", "reference"], False),
    ],
)
def test_the_light_warm_up_skips_the_probe_and_the_baselines(monkeypatch, mode, first, compiles):
    """Light: a stored probe tells the real verdict's `begin` the task's need, so the warm-up runs
    no probe either (its meta-tensor pass imports sympy); a search's warm-up pays both."""
    monkeypatch.setenv("KERNELEVO_WORKER_WARMUP", mode)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the GPU's request list
    asked: list[str] = []

    def handle(req):
        asked.append(req["op"])
        return {}

    warm_up(handle)
    assert asked[: len(first)] == first
    assert ("baselines" in asked) is compiles


def test_a_one_verdict_evaluator_asks_its_judge_for_the_light_warm_up(monkeypatch):
    monkeypatch.delenv("KERNELEVO_WORKER_WARMUP", raising=False)
    for warmup, want in ((None, "1"), ("light", "light")):
        ev = Evaluator("cpu", **({"warmup": warmup} if warmup else {}))
        try:
            assert ev.judge.spec().env["KERNELEVO_WORKER_WARMUP"] == want
        finally:
            ev.close()


def _last_line_of(code: str) -> str:
    """Run `code` in a fresh interpreter without a GPU; its last printed line."""
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": ""},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def test_the_runner_host_does_not_start_nvrtc_before_it_forks_candidates():
    """libnvrtc loads libcuda and calls cuInit: CUDA started in the host before the fork leaves
    every candidate process unable to start it, as seen on the H200 ("CUDA driver initialization
    failed" on every candidate once the host warmed NVRTC up)."""
    code = (
        "from kernelevo.runner.preload import preload; preload(); "
        "print('libnvrtc' in open('/proc/self/maps').read())"
    )
    assert _last_line_of(code) == "False"


def test_the_runner_host_hashes_triton_once_for_every_candidate_it_forks():
    """Triton hashes its own sources and libtriton (~0.5 s) at a process's first launch; the host
    does it before forking, so a candidate child finds the key computed."""
    code = (
        "import importlib, os, json\n"
        "from kernelevo.runner.preload import preload\n"
        "preload()\n"
        "key = None\n"
        "for where in ('triton.runtime.cache', 'triton.compiler.compiler'):\n"
        "    key = getattr(importlib.import_module(where), 'triton_key', None)\n"
        "    if key: break\n"
        "before = key.cache_info().currsize\n"
        "r, w = os.pipe()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    key()\n"
        "    os.write(w, json.dumps(key.cache_info().misses).encode()); os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "print(json.dumps([before, json.loads(os.read(r, 100))]))\n"
    )
    computed_in_host, misses_in_child = json.loads(_last_line_of(code))
    assert computed_in_host == 1, "the host computed Triton's key before forking"
    assert misses_in_child == 1, "the child reused it (the only miss is the host's)"


def test_the_runner_host_imports_what_a_first_triton_launch_and_a_load_would():
    """A launch's argument specialization imports triton.experimental.gluon (0.13 s of a fresh
    child's first launch on the H200, compiled from source each time), and every load guards
    load_inline in torch.utils.cpp_extension (0.13 s here); the host imports both first."""
    code = (
        "import sys\n"
        "from kernelevo.runner.preload import preload\n"
        "preload()\n"
        "print('triton.experimental.gluon' in sys.modules, 'torch.utils.cpp_extension' in sys.modules)\n"
    )
    assert _last_line_of(code) == "True True"


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

    from kernelevo.worker.pool import Worker, start_all

    class Slow(Worker):  # a real Worker whose process start is a sleep of `s` seconds
        def __init__(self, s: float, fail: bool = False) -> None:
            super().__init__("cpu", isolate=False)
            self.s, self.fail = s, fail

        def start(self) -> None:
            time.sleep(self.s)
            if self.fail:
                raise RuntimeError("no start")
            self.proc = Running()  # type: ignore[assignment]

    class Running:  # what `alive` asks of a started process
        def poll(self) -> None:
            return None

        def close(self) -> None:
            pass

    fast, slow = Slow(0.01), Slow(0.3)
    t0 = time.perf_counter()
    start_all([fast, slow])
    assert fast.start_s is not None and slow.start_s is not None
    assert fast.start_s < 0.2 <= slow.start_s
    assert time.perf_counter() - t0 < 0.3 + 0.25, "side by side, not one after the other"
    broken, other = Slow(0.05, fail=True), Slow(0.2)
    with pytest.raises(RuntimeError, match="no start"):
        start_all([broken, other])
    assert other.start_s is not None, "the other start was waited for before the failure was raised"


def test_a_one_shot_verdict_compiles_ahead_while_its_judge_still_starts(monkeypatch, tmp_path):
    """`kernelevo verify` from a fresh shell starts its three workers side by side and sends each
    request as soon as the worker it goes to is ready: with the task's probe stored (a task verified
    before), compile-ahead (the compile worker's) does not wait for the judge's start and warm-up."""
    import time
    from types import SimpleNamespace

    from support import CANDIDATES, EXAMPLES

    from kernelevo.judge import baseline_store
    from kernelevo.task import read_task
    from kernelevo.verify import resolve_size, verify_candidate
    from kernelevo.worker.pool import Worker

    monkeypatch.setenv("KERNELEVO_STATE", str(tmp_path / "state"))
    task = read_task(EXAMPLES / "softmax.py")
    passed = SimpleNamespace(
        ev=SimpleNamespace(runner=SimpleNamespace(isolation="sandbox")),
        task=task,
        size=resolve_size(task, "cpu", None),
        device="cpu",
    )
    baseline_store.save(baseline_store.probe_key(passed), {"probed": True}, "probe")

    events: list[tuple[float, str]] = []
    start, request = Worker.start, Worker.request

    def slow_judge_start(self):
        if self.module == "kernelevo.judge.process":
            time.sleep(3.0)  # a judge still warming up (its CUDA context, on a GPU)
        start(self)
        events.append((time.perf_counter(), f"ready {self.module}"))

    def noted_request(self, message, timeout):
        events.append((time.perf_counter(), f"{message.get('op')} {self.module}"))
        return request(self, message, timeout)

    monkeypatch.setattr(Worker, "start", slow_judge_start)
    monkeypatch.setattr(Worker, "request", noted_request)
    verdict = verify_candidate(
        task, CANDIDATES / "softmax" / "triton_ok.py", device="cpu", use_cache=False
    )
    assert verdict.status == "verified", verdict.reason
    assert "task_probe_s" in verdict.phases and "probe" not in verdict.phases["judge_ops_s"]
    when = {what: t for t, what in reversed(events)}  # the first time each event happened
    assert (
        when["precompile kernelevo.runner.compile_worker"] < when["ready kernelevo.judge.process"]
    )
    waited = verdict.phases["worker_wait_s"]
    assert waited["judge"] > 0 and set(waited) == {"judge", "runner", "compiler"}


@pytest.mark.parametrize(
    ("candidate", "warmed", "skipped"),
    [
        ("triton_ok.py", "warm_compile", "cuda_compilers"),
        ("cuda_fast.py", "cuda_compilers", "warm_compile"),
    ],
)
def test_a_one_shot_compile_worker_warms_only_the_compiler_its_candidate_uses(
    candidate, warmed, skipped
):
    """The compile worker's start (the last of the three a one-shot verdict waits for) warms up
    Triton's first compile for a Triton candidate and nvcc/NVRTC for a CUDA one, not both."""
    from support import CANDIDATES, EXAMPLES

    from kernelevo.verify import verify_candidate

    verdict = verify_candidate(
        EXAMPLES / "softmax.py", CANDIDATES / "softmax" / candidate, device="cpu", use_cache=False
    )
    assert verdict.status in ("verified", "unverified"), verdict.reason  # CUDA: compiled, not run
    ahead = next(c for c in verdict.checks if c.name == "compiled_ahead")
    assert ahead.passed and ahead.detail["status"] == "compiled", ahead.message
    steps = verdict.phases["worker_start_parts_s"]["compiler"]
    assert warmed in steps and skipped not in steps, steps
