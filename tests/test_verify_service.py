"""The workspace's verification service (kernelevo/service.py): `kernelevo verify` calls share one warm
evaluator, get the same verdicts as in-process judging, say a broken task in one line, and the service
exits by itself when idle. Each test has its own workspace and socket folder."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import CANDIDATES, EXAMPLES, ROOT, run_kernelevo

from kernelevo import service
from kernelevo.sandbox.sandbox_process import descendants


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    monkeypatch.setenv("KERNELEVO_RUN_DIR", str(run_dir))
    ws = tmp_path / "ws"
    ws.mkdir()
    yield ws
    with contextlib.suppress(service.ServiceError):
        service.request(ws, "cpu", service.Stop(), 30)


def _env(ws: Path) -> dict[str, str]:
    return {"KERNELEVO_RUN_DIR": os.environ["KERNELEVO_RUN_DIR"], "KERNELEVO_SERVICE": "on"}


def test_verify_calls_share_one_warm_service_and_get_the_in_process_verdicts(workspace):
    task, good = EXAMPLES / "softmax.py", CANDIDATES / "softmax" / "triton_ok.py"
    args = ["verify", task, good, "--json", "--no-cache", "--device", "cpu", "--seed", "5"]
    first = run_kernelevo(args, workspace, _env(workspace))
    assert first.returncode == 0, first.stderr
    pid = service.request(workspace, "cpu", service.Ping(), 30).pid
    wrong = workspace / "triton_wrong.py"  # the same kernel, its output scaled by 1.01
    wrong.write_text(
        good.read_text().replace("return out.view(x.shape)", "return out.view(x.shape) * 1.01")
    )
    second = run_kernelevo(
        ["verify", task, wrong, "--no-cache", "--device", "cpu"], workspace, _env(workspace)
    )
    assert second.returncode == 1 and second.stdout.startswith("INCORRECT"), second.stdout
    ping = service.request(workspace, "cpu", service.Ping(), 30)
    assert ping.pid == pid and ping.served == 2  # one service, warm for the second call
    os.kill(ping.workers["judge"], signal.SIGKILL)  # a worker lost between two calls...
    again = run_kernelevo(args, workspace, _env(workspace))
    assert again.returncode == 0, again.stderr  # ...is started again by the same service
    judge_before = ping.workers["judge"]
    ping = service.request(workspace, "cpu", service.Ping(), 30)
    assert ping.pid == pid and ping.served == 3
    assert ping.workers["judge"] not in (None, judge_before)
    off = run_kernelevo(args, workspace, {"KERNELEVO_SERVICE": "off"})
    import json

    a, b = json.loads(first.stdout), json.loads(off.stdout)
    assert (a["status"], a["reason"]) == (b["status"], b["reason"]) == ("verified", b["reason"])
    assert service.request(workspace, "cpu", service.Ping(), 30).served == 3  # off: not used


def test_a_call_to_the_warm_service_imports_no_engine_and_probes_no_compiler(workspace):
    """The client's own start is most of what a warm verdict costs beyond the verdict: it imports
    neither the verifier nor the language-model providers, and asks NVML only (nvcc, NVRTC
    unprobed). It imported all three and probed both compilers: 0.25 s on a 2-core CPU."""
    task, good = EXAMPLES / "softmax.py", CANDIDATES / "softmax" / "triton_ok.py"
    args = ["verify", task, good, "--no-cache", "--seed", "5"]
    assert run_kernelevo(args, workspace, _env(workspace)).returncode == 0
    warm = run_kernelevo(args, workspace, {**_env(workspace), "PYTHONPROFILEIMPORTTIME": "1"})
    assert warm.returncode == 0 and warm.stdout.startswith("VERIFIED"), warm.stderr
    imported = {ln.rsplit("|", 1)[-1].strip() for ln in warm.stderr.splitlines() if "|" in ln}
    assert "kernelevo.service" in imported
    unwanted = {"kernelevo.verify", "kernelevo.evaluate", "kernelevo.measure.machine"}
    unwanted |= {"kernelevo.backends.nvrtc", "kernelevo.llm.provider", "torch"}
    assert not imported & unwanted


def test_a_broken_task_through_the_service_is_one_line(workspace, tmp_path):
    bad = tmp_path / "bad_task.py"
    bad.write_text(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x\ndef get_inputs():\n    raise ValueError('no inputs here')\n"
        "def get_init_inputs():\n    return []\n"
    )
    r = run_kernelevo(
        ["verify", bad, CANDIDATES / "softmax" / "triton_ok.py", "--device", "cpu"],
        workspace,
        _env(workspace),
    )
    assert r.returncode == 2 and "no inputs here" in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("kernelevo: still ")]
    assert "Traceback" not in r.stderr and lines[-1].startswith("kernelevo: error:")
    assert all("started the verification service" in x for x in lines[:-1]), lines


def test_a_silent_client_is_dropped_and_the_idle_service_exits_removing_its_socket(workspace):
    import socket

    cmd = [sys.executable, "-m", "kernelevo.service", str(workspace), "cpu", "5"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    path = service.address(workspace, "cpu")
    deadline = time.monotonic() + 240
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert service.request(workspace, "cpu", service.Ping(), 240).pid == proc.pid  # warm now
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(str(path))  # connects and never sends a request
    t0 = time.monotonic()
    assert service.request(workspace, "cpu", service.Ping(), 90).pid == proc.pid
    assert time.monotonic() - t0 < 3 * service.READ_S  # not held until the silent one leaves
    silent.close()
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.returncode == 0, proc.stderr.read()
    assert not path.exists()


def test_a_terminated_service_removes_its_socket(workspace):
    cmd = [sys.executable, "-m", "kernelevo.service", str(workspace), "cpu", "600"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while not service.address(workspace, "cpu").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert service.request(workspace, "cpu", service.Ping(), 240).pid == proc.pid
    proc.terminate()
    assert proc.wait(120) == 0, proc.stderr.read()
    assert not service.address(workspace, "cpu").exists()


def test_the_address_is_private_and_differs_per_workspace_code_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELEVO_RUN_DIR", str(tmp_path / "run"))
    a = service.address(tmp_path / "a", "cpu")
    assert a != service.address(tmp_path / "b", "cpu") and a != service.address(
        tmp_path / "a", "cuda"
    )
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "other-cache"))
    b = service.address(tmp_path / "a", "cpu")
    assert b != a
    import kernelevo.sandbox.mounts as mounts

    code = tmp_path / "checkout"
    (code / "kernelevo").mkdir(parents=True)
    (code / "kernelevo" / "x.py").write_text("")
    monkeypatch.setattr(mounts, "package_root", lambda: code)
    c = service.address(tmp_path / "a", "cpu")
    os.utime(code / "kernelevo" / "x.py", ns=(1, 10**18))  # the code was edited
    assert len({b, c, service.address(tmp_path / "a", "cpu")}) == 3
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o777)
    open_dir.chmod(0o777)
    with pytest.raises(service.ServiceError, match="not private"):
        service._private_dir(open_dir)


def _running(pid: int) -> bool:
    try:  # a zombie holds no memory: it only waits for its parent to read its exit
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def _gone_within(pids: set[int], seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while any(map(_running, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return {p for p in pids if _running(p)}


def test_stop_answers_once_the_service_started_by_verify_and_all_its_workers_are_gone(workspace):
    task, good = EXAMPLES / "softmax.py", CANDIDATES / "softmax" / "triton_ok.py"
    args = ["verify", task, good, "--no-cache", "--device", "cpu", "--service", "on"]
    r = run_kernelevo(args, workspace, {"KERNELEVO_RUN_DIR": os.environ["KERNELEVO_RUN_DIR"]})
    assert r.returncode == 0, r.stderr
    ping = service.request(workspace, "cpu", service.Ping(), 30)
    workers = set(descendants(ping.pid))
    assert {ping.workers["judge"], ping.workers["runner"]} <= workers
    assert service.request(workspace, "cpu", service.Stop(), 120) == service.Stopped()
    assert _gone_within(workers, 0) == set()  # no worker outlives the reply
    assert _gone_within({ping.pid}, 30) == set()
    assert not service.address(workspace, "cpu").exists()


def test_two_commands_starting_the_service_at_once_share_one_and_one_says_started(workspace):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda _: service.start(workspace, "cpu", idle_s=600), range(2)))
    assert got[0].pid == got[1].pid
    assert sorted(r.started_here for r in got) == [False, True]
    assert service.request(workspace, "cpu", service.Stop(), 120) == service.Stopped()


def test_a_second_start_beside_a_busy_service_leaves_that_one_alone(workspace):
    first = service.start(workspace, "cpu", idle_s=600).pid
    os.kill(first, signal.SIGSTOP)  # a service busy for seconds with one request answers no ping
    try:
        cmd = [sys.executable, "-m", "kernelevo.service", str(workspace), "cpu", "600"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        second = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(8)  # longer than a ping's 5 s wait
    finally:
        os.kill(first, signal.SIGCONT)
    assert second.wait(120) == 0, second.stderr.read()  # it found the first answering and left
    assert service.request(workspace, "cpu", service.Ping(), 30).pid == first


def test_a_service_no_client_can_reach_exits_with_its_workers(workspace, tmp_path):
    import shutil

    checkout = tmp_path / "checkout"  # a copy of the code, edited below as a merge would
    shutil.copytree(
        ROOT / "kernelevo", checkout / "kernelevo", ignore=shutil.ignore_patterns("__pycache__")
    )
    run_dir = Path(os.environ["KERNELEVO_RUN_DIR"])
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    pids = []
    for unreachable in ("code edited", "socket removed"):
        cmd = [sys.executable, "-m", "kernelevo.service", str(workspace), "cpu", "600"]
        proc = subprocess.Popen(  # run in the workspace: the checkout here would come first
            cmd, env=env, cwd=workspace, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 240
        while not list(run_dir.glob("*.sock")) and time.monotonic() < deadline:
            time.sleep(0.1)
        (sock,) = run_dir.glob("*.sock")
        time.sleep(3)  # its workers are starting
        workers = set(descendants(proc.pid))
        assert workers and proc.poll() is None, unreachable
        if unreachable == "code edited":  # every client now computes another address
            os.utime(checkout / "kernelevo" / "verdict.py", ns=(time.time_ns(),) * 2)
        else:  # as a bench removing its run folder did
            sock.unlink()
        assert proc.wait(60) == 0, (unreachable, proc.stderr.read())
        assert _gone_within(workers, 10) == set(), unreachable
        pids.append(proc.pid)
    assert len(set(pids)) == 2


def test_a_frame_that_is_no_request_is_answered_with_its_error_and_the_service_goes_on(workspace):
    import socket

    from kernelevo.worker import protocol

    pid = service.start(workspace, "cpu", idle_s=600).pid
    for frame, said in (
        ({"op": "verify", "task": "t.py"}, "missing 1 required positional argument: 'candidate'"),
        ({"op": "ping", "verdict": {"status": "verified"}}, "ping: unknown field(s) verdict"),
        ({"op": "patch"}, "unknown op 'patch'"),
    ):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(30)
            conn.connect(str(service.address(workspace, "cpu")))
            conn.sendall(protocol.encode(frame))
            reply = protocol.read(conn.makefile("rb"))
        assert reply is not None and said in reply["error"], reply
    assert service.request(workspace, "cpu", service.Ping(), 30).pid == pid
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(str(service.address(workspace, "cpu")))
        conn.sendall(b'{"op": "ping"}\n')  # JSON lines: not a frame of this protocol
        with pytest.raises(service.ServiceError, match="closed the connection without a message"):
            service._receive(conn)
