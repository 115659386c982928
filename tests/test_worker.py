"""Worker processes: a hanging, crashing or printing candidate costs one verdict, never the caller."""

import os
import time
from pathlib import Path

from support import CANDIDATES, EXAMPLES

from kernelevo.sandbox.env import sandbox_env
from kernelevo.verify import verify_candidate
from kernelevo.worker.pool import Worker

SOFTMAX = EXAMPLES / "softmax.py"
GOOD = CANDIDATES / "softmax" / "triton_ok.py"


def hang_candidate(folder):
    """The good softmax candidate with a forward that never returns."""
    cand = folder / "hang.py"
    cand.write_text(
        GOOD.read_text().replace(
            "def forward(self, x",
            "def forward(self, x, _h=None):\n        while True:\n            pass\n\n    def _unused(self, x",
            1,
        )
    )
    return cand


def _candidate(tmp_path, body: str, name: str = "cand.py"):
    src = GOOD.read_text() + "\n\n" + body
    p = tmp_path / name
    p.write_text(src)
    return p


def test_worker_env_is_built_from_an_allowlist():
    env = sandbox_env(
        {"KERNELEVO_CONFIG": "/x", "HF_AUTH": "d", "TRITON_CACHE_DIR": "/c"},
        home="/s",
        base={
            "ANTHROPIC_API_KEY": "a",
            "GITHUB_TOKEN": "b",
            "MY_SECRET": "c",
            "PATH": "/bin",
            "HF_AUTH": "d",
            "CUDA_VISIBLE_DEVICES": "0",
            "KERNELEVO_CONFIG": "/k.toml",
            "AWS_PROFILE": "prod",
            "TORCH_SECRET_THING": "x",
            "SOME_APP_URL": "http://a:b@h",
        },
    )
    assert env == {
        "PATH": "/bin",
        "CUDA_VISIBLE_DEVICES": "0",
        "TRITON_CACHE_DIR": "/c",
        "HOME": "/s",
        "TMPDIR": "/tmp",
        "USER": "kernelevo",
        "LOGNAME": "kernelevo",
    }


def test_worker_never_sees_api_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    with Worker("cpu") as w:
        reply = w.request({"op": "ping"}, 60)
    assert reply["pong"] and reply["secrets_seen"] == []


def test_candidate_reading_key_sees_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    cand = tmp_path / "cand.py"
    cand.write_text(
        GOOD.read_text().replace(
            "class ModelNew",
            "import os\nassert os.environ.get('ANTHROPIC_API_KEY') is None, 'saw the key'\n\nclass ModelNew",
            1,
        )
    )
    # `import os` is refused statically; go to the judge directly to test the candidate process's environment
    from kernelevo.evaluate import Evaluator

    with Evaluator("cpu") as ev:
        v = _judge(ev, cand)
    assert v.status == "verified", v.reason


def _judge(evaluator, cand, timeout=60.0):
    """The dynamic verdict alone, past the static checks (which reject what these candidates use)."""
    from kernelevo.task import read_task
    from kernelevo.verify import _run_dynamic, default_size

    return _run_dynamic(
        read_task(SOFTMAX),
        cand,
        "triton",
        [],
        evaluator,
        evaluator.device,
        default_size(evaluator.device),
        timeout,
        None,
        measure=False,
    )


def test_hanging_candidate_stopped_within_limit(tmp_path, evaluator):
    cand = hang_candidate(tmp_path)
    host = evaluator.runner.proc.pid
    t0 = time.monotonic()
    v = _judge(evaluator, cand, timeout=5)
    assert v.status == "timeout" and "time limit" in v.reason, v.reason
    assert time.monotonic() - t0 < 60  # unstopped it would hang until pytest's limit
    assert evaluator.runner.proc.pid == host  # only the candidate's own process was stopped
    assert _judge(evaluator, GOOD).status == "verified"


def test_hang_gives_timeout_verdict(tmp_path):
    cand = hang_candidate(tmp_path)
    t0 = time.monotonic()
    v = verify_candidate(SOFTMAX, cand, device="cpu", timeout=5)
    assert v.status == "timeout" and "time limit" in v.reason
    # Unstopped, the hang would last until pytest's own 600 s limit; three processes start first
    # (judge, runner host, compiler), which takes long on a loaded 2-core machine.
    assert time.monotonic() - t0 < 150


def test_crashing_candidate_reported(tmp_path, evaluator):
    cand = tmp_path / "crash.py"
    cand.write_text(
        GOOD.read_text().replace(
            "def forward(self, x",
            "def forward(self, x, _h=None):\n        __import__('os')._exit(7)\n\n    def _unused(self, x",
            1,
        )
    )
    # __import__ is rejected statically; go to the judge directly to test the crash path
    v = _judge(evaluator, cand)
    assert v.status == "runtime_error" and "exit code 7" in v.reason, v.reason
    assert _judge(evaluator, GOOD).status == "verified"


def test_printing_candidate_does_not_corrupt_channel(tmp_path):
    cand = tmp_path / "noisy.py"
    cand.write_text(
        GOOD.read_text().replace(
            "def forward(self, x",
            "def forward(self, x, _h=None):\n        print('\\x00\\x00\\x00\\x10garbage' * 100)\n        "
            "return self._real(x)\n\n    def _real(self, x",
            1,
        )
    )
    v = verify_candidate(SOFTMAX, cand, device="cpu")
    assert v.status == "verified", v.reason


def test_patching_at_runtime_is_rejected_and_worker_recycled(tmp_path):
    cand = tmp_path / "patch.py"
    cand.write_text(
        GOOD.read_text().replace(
            "class ModelNew",
            "import torch as _t\nvars(_t)['allclose'] = lambda *a, **k: True\n\nclass ModelNew",
            1,
        )
    )
    assert (
        "vars() is not allowed" in verify_candidate(SOFTMAX, cand, device="cpu").reason
    )  # the allowlist first
    # behind it, the candidate process's integrity check (the judge is elsewhere, so the patch could
    # not fool it; a kernel that patches torch is still refused): go to the judge directly
    from kernelevo.evaluate import Evaluator

    with Evaluator("cpu") as ev:
        v = _judge(ev, cand)
        assert v.status == "rejected" and "torch.allclose" in v.reason, v.reason
        assert _judge(ev, GOOD).status == "verified"


def test_thread_left_running_is_rejected(tmp_path, evaluator):
    cand = tmp_path / "thread.py"
    cand.write_text(
        GOOD.read_text().replace(
            "class ModelNew",
            "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), "
            "daemon=True).start()\n\n\nclass ModelNew",
            1,
        )
    )
    # the static checks reject `import threading`; go to the judge directly to test the run-time guard
    v = _judge(evaluator, cand)
    assert v.status == "rejected" and "background thread left running" in v.reason, v.reason
    assert _judge(evaluator, GOOD).status == "verified"  # the next candidate has a fresh process


def test_threads_started_by_the_harness_are_not_a_violation():
    import threading

    from kernelevo.worker.harness_integrity import TrustedThreads, new_threads

    stop = threading.Event()
    before = {t.ident for t in threading.enumerate()}
    with TrustedThreads():
        harness = threading.Thread(target=stop.wait, name="compile-pool", daemon=True)
        harness.start()
    candidate = threading.Thread(target=stop.wait, name="candidate-side-work", daemon=True)
    candidate.start()
    try:
        assert new_threads(before) == ["candidate-side-work"]
    finally:
        stop.set()


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except FileNotFoundError:
        return True


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def test_worker_dies_with_its_engine(tmp_path):
    """An engine killed mid-candidate (a time limit, kill -9) must not leave a busy candidate process
    behind, still holding a GPU with a spinning kernel: the runner host and its child both go."""
    import signal
    import subprocess
    import sys

    from support import ROOT

    hang = hang_candidate(tmp_path)
    code = (
        "import threading, time\nfrom kernelevo.evaluate import Evaluator\nfrom kernelevo.task import read_task\n"
        "from kernelevo.verify import _run_dynamic\nev = Evaluator('cpu')\nev.warm()\n"
        "print(ev.runner.proc.pid, flush=True)\n"
        f"_run_dynamic(read_task({str(SOFTMAX)!r}), {str(hang)!r}, 'triton', [], ev, 'cpu', 'small', 300, None)\n"
    )
    engine = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        host = int(engine.stdout.readline())
        deadline = time.monotonic() + 60
        while not _children(host) and time.monotonic() < deadline:
            time.sleep(0.2)
        children = _children(host)
        assert children, "no candidate process started"
        time.sleep(1.0)  # the candidate is inside the hanging forward now
        os.kill(engine.pid, signal.SIGKILL)
        engine.wait(10)
        deadline = time.monotonic() + 10
        while not all(_gone(p) for p in [host, *children]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _gone(host), "the runner host outlived the engine"
        assert all(_gone(p) for p in children), "the candidate process outlived the engine"
    finally:
        if engine.poll() is None:
            engine.kill()


def _my_workers() -> list[int]:
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmd = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"kernelevo.worker.main" in cmd:
            pids.append(int(stat.parent.name))
    return pids


def test_a_warming_thread_and_a_request_start_one_process():
    import threading

    before = set(_my_workers())  # other tests' workers in this process (the session evaluator)
    with Worker("cpu") as w:
        threads = [threading.Thread(target=w.ensure_started) for _ in range(3)]
        for t in threads:
            t.start()
        assert w.request({"op": "ping"}, 60)["pong"]
        for t in threads:
            t.join()
        assert set(_my_workers()) - before == {w.proc.pid} and w.restarts == 0


def test_the_warm_up_task_and_candidate_verify(tmp_path):
    """A GPU worker runs this pair through verify and measure before it says ready; a broken pair
    would only show as a slow first candidate, so it is checked here (interpreter, CPU)."""
    from kernelevo.judge.warmup import CANDIDATE, TASK

    (tmp_path / "task.py").write_text(TASK)
    (tmp_path / "cand.py").write_text(CANDIDATE)
    v = verify_candidate(tmp_path / "task.py", tmp_path / "cand.py", device="cpu", use_cache=False)
    assert v.status == "verified", v.reason


def test_a_worker_closed_while_it_starts_leaves_no_process():
    """A one-shot verify starts its workers without waiting and may finish (a compile error, a task
    fault) while one still starts: closing it then stops that start too, and nothing outlives it."""
    before = set(_my_workers())
    for delay in (0.0, 0.05, 1.0):  # still spawning, just spawned, importing
        w = Worker("cpu")
        w.start_soon()
        time.sleep(delay)
        w.close(graceful=False)
        assert w.proc is None and not w.alive
        deadline = time.monotonic() + 10
        while set(_my_workers()) - before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert set(_my_workers()) - before == set(), f"a worker outlived close() ({delay} s)"


def test_a_failed_start_reaches_the_request_that_needed_it(monkeypatch):
    """The request waits for the start begun in the background and raises its failure, rather than
    starting a second process behind it."""
    import pytest

    from kernelevo.worker import pool
    from kernelevo.worker.pool import WorkerError

    spawned = []
    real = pool.spawn
    monkeypatch.setattr(pool, "spawn", lambda spec: spawned.append(spec) or real(spec))
    w = Worker("cpu", module="kernelevo.no_such_worker")
    try:
        w.start_soon()
        with pytest.raises(WorkerError, match="crashed"):
            w.request({"op": "ping"}, 60)
        assert len(spawned) == 1
    finally:
        w.close()


def test_a_start_is_split_where_its_seconds_went():
    """`phases.worker_start_parts_s`: the sandbox, the interpreter with its imports, each marked step
    of the preload or warm-up, from the worker's own clock; together they make the start the engine
    waited for."""
    with Worker("cpu") as w:
        t0 = time.perf_counter()
        w.ensure_started()
        total = time.perf_counter() - t0
        parts = w.start_parts
        assert set(parts) == {"sandbox", "python", "rest"}  # the plain loop marks no steps
        assert all(v >= 0 for v in parts.values())
        assert parts["python"] > 0.05  # an interpreter start at least
        assert abs(sum(parts.values()) - total) < 0.1  # /proc's start time is in 10 ms ticks


def test_a_worker_starts_beside_the_isolation_probe_not_after_it(monkeypatch):
    """The probe's sandbox (a process start) ran before every first worker's spawn; now beside it,
    and the start still waits for its answer before the worker is used."""
    from kernelevo.sandbox import probe
    from kernelevo.worker import pool

    marks = {}
    real_probe, real_spawn = probe._probe_isolation, pool.spawn

    def slow_probe():
        time.sleep(1.0)
        found = real_probe()
        marks["probed"] = time.perf_counter()
        return found

    def noted_spawn(spec):
        marks.setdefault("spawned", time.perf_counter())
        return real_spawn(spec)

    monkeypatch.setattr(probe, "_probe_isolation", slow_probe)
    monkeypatch.setattr(pool, "spawn", noted_spawn)
    with Worker("cpu") as w:
        w.ensure_started()
        marks["ready"] = time.perf_counter()
        assert marks["spawned"] < marks["probed"] <= marks["ready"]
        assert w.request({"op": "ping"}, 60)["pong"]


def test_a_machine_that_cannot_isolate_refuses_before_any_request(monkeypatch):
    """With the probe run beside the start, a refusal still comes before the worker gets a request,
    says what to do, and leaves no process behind."""
    import pytest

    from kernelevo.sandbox import Isolation, SandboxError, probe

    before = set(_my_workers())
    monkeypatch.setattr(
        probe, "_probe_isolation", lambda: Isolation("none", "it can reach the network")
    )
    w = Worker("cpu")
    try:
        with pytest.raises(SandboxError, match=r"it can reach the network.*--no-sandbox"):
            w.request({"op": "ping"}, 60)
        assert w.proc is None and w.requests_served == 0
        assert set(_my_workers()) - before == set()
    finally:
        w.close()
