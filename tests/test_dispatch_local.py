"""The local dispatcher: candidates go to whichever worker is free, a lost worker's candidate
is queued again, tasks stay on one GPU model; `kernelevo optimize --all` shares workers and
one budget. Run on the CPU (several CPU workers stand in for GPUs)."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fakes.anthropic_server import serve_anthropic
from fakes.scripted_server import kernel_reply
from support import CANDIDATES, EXAMPLES, ROOT

from kernelevo.dispatch import RAY_MISSING, DispatchError, lost_worker
from kernelevo.dispatch.slots import Slot, SlotPool
from kernelevo.store import Store
from kernelevo.verdict import Verdict

SOFTMAX = EXAMPLES / "softmax.py"
GOOD = (CANDIDATES / "softmax" / "triton_ok.py").read_text()
RMS_GOOD = (CANDIDATES / "rms_norm" / "triton_ok.py").read_text()


def with_nonce(source: str, nonce: object) -> str:
    return f"{source}\n# nonce {nonce}\n"  # a new content hash: the verdict cache cannot answer


def slow(source: str, marker: str, seconds: float = 3.0) -> str:
    """A correct candidate that announces itself (torch.save of a file named `marker` into its working
    directory, its sandbox's scratch folder, the only place it can write) and then takes its time, on
    its first forward in the run worker only (the compile worker's forward sees meta tensors). It
    stays inside the static allowlist: no os, time or open."""
    helper = (
        "_SLOW_DONE = []\n\n\ndef _slow_once(x):\n"
        "    if x.device.type == 'meta' or _SLOW_DONE:\n        return\n"
        "    _SLOW_DONE.append(1)\n"
        f"    torch.save(torch.zeros(1), {marker!r})\n"
        f"    s = 0\n    for i in range({int(seconds * 1e7)}):\n        s += i\n\n\n"
    )
    forward = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    assert forward in source and "class ModelNew" in source
    return source.replace("class ModelNew", helper + "class ModelNew", 1).replace(
        forward, forward + "        _slow_once(x)\n", 1
    )


def started(marker: str) -> bool:
    """Whether a `slow` candidate has announced itself in some sandbox's scratch folder."""
    import glob
    import tempfile

    return bool(glob.glob(os.path.join(tempfile.gettempdir(), "kernelevo-sandbox-*", marker)))


# -- slots ----------------------------------------------------------------------------------
def slots(**models: int) -> list[Slot]:
    return [Slot(f"{m}{k}", m, None) for m, n in models.items() for k in range(n)]


def test_a_task_stays_on_its_majority_gpu_model():
    pool = SlotPool(slots(H100=2, A100=1))
    got = {pool.acquire("task-a", "c").gpu_name for _ in range(2)}
    assert got == {"H100"}  # one search on a mixed machine runs on the model with most GPUs
    with pytest.raises(DispatchError):
        pool.acquire(
            "task-a", "c", timeout=0.2
        )  # both H100s busy: it waits rather than use the A100
    assert pool.acquire("task-b", "c").gpu_name == "A100"  # a second search takes the other model
    assert (
        pool.capacity == 3 and pool.capacity_for("task-a") == 2 and pool.capacity_for("task-b") == 1
    )


def test_a_freed_slot_wakes_a_waiter_and_lost_models_are_given_up():
    pool = SlotPool(slots(A=1, B=1))
    a = pool.acquire("t", "c1")
    got = []
    waiter = threading.Thread(target=lambda: got.append(pool.acquire("t", "c2", timeout=10)))
    waiter.start()
    time.sleep(0.2)
    assert not got
    pool.release(a)
    waiter.join()
    assert got == [a]
    pool.retire(a)  # the task's model is gone for good: it moves to what is left
    assert pool.acquire("t", "c3").gpu_name == "B"
    pool.retire(next(iter(pool)))
    with pytest.raises(DispatchError, match="no evaluation worker is left"):
        pool.acquire("t", "c4")


def test_lost_worker_is_a_field_of_the_verdict_not_its_wording():
    worded = "the worker process crashed (signal 9) while running the candidate"
    assert not lost_worker(Verdict("runtime_error", worded)), "a reason's text decides nothing"
    assert lost_worker(Verdict("runtime_error", "anything", worker_lost=True))
    assert lost_worker({"status": "runtime_error", "reason": "", "worker_lost": True})
    assert not lost_worker(Verdict("timeout", "time limit of 300 s reached"))
    stored = Verdict.from_dict(Verdict("runtime_error", "x", worker_lost=True).to_dict())
    assert stored.worker_lost


# -- the local dispatcher on CPU workers --------------------------------------------------------
def test_candidates_go_to_free_workers_and_record_where(tmp_path):
    from kernelevo.dispatch.local import LocalDispatcher

    paths = []
    for i in range(4):
        p = tmp_path / f"cand{i}.py"
        p.write_text(with_nonce(GOOD, f"free-{i}-{time.time()}"))
        paths.append(p)
    peak = []
    with LocalDispatcher("cpu", workers=2, store=Store(tmp_path / "s.sqlite")) as d:
        assert d.capacity == 2
        with ThreadPoolExecutor(4) as ex:
            futures = [ex.submit(d.evaluate, SOFTMAX, p, 0) for p in paths]
            while not all(f.done() for f in futures):
                peak.append(len(d.in_flight()))
                time.sleep(0.05)
            verdicts = [f.result() for f in futures]
        stats = d.stats()
    assert [v.status for v in verdicts] == ["verified"] * 4
    assert {v.device["worker"] for v in verdicts} == {"cpu0", "cpu1"}
    assert all(v.device["gpu_name"] == "cpu" and v.device["attempts"] == 1 for v in verdicts)
    assert max(peak) == 2
    assert stats["evaluations"] == 4 and stats["lost_workers"] == 0
    # where each verdict's wall went before the verifier: compiling ahead, then a slot
    before = [v.phases["dispatch"] for v in verdicts]
    assert all(b["compile_ahead_s"] > 0 and b["slot_wait_s"] >= 0 for b in before), before
    assert all(v.phases["cleanup_s"] > 0 for v in verdicts)


@pytest.fixture
def compiled(monkeypatch):
    """The candidates the dispatcher compiled ahead, in order."""
    import kernelevo.dispatch.local as local

    seen = []
    real = local.precompile
    monkeypatch.setattr(local, "precompile", lambda *a, **k: seen.append(a[2]) or real(*a, **k))
    return seen


def test_a_cached_candidate_is_not_compiled_ahead_again(tmp_path, compiled):
    import kernelevo.dispatch.local as local

    cand = tmp_path / "cand.py"
    cand.write_text(with_nonce(GOOD, f"cached-{time.time()}"))
    with local.LocalDispatcher("cpu", workers=1, store=Store(tmp_path / "s.sqlite")) as d:
        first = d.evaluate(SOFTMAX, cand, 0)
        again = d.evaluate(SOFTMAX, cand, 0)
    assert first.status == again.status == "verified" and not first.cached and again.cached
    assert (
        "dispatch" in first.phases and "dispatch" not in again.phases
    )  # a cached verdict's are its first run's
    assert compiled == [cand], (
        "the second evaluation is answered by the verdict cache, without the compile pool"
    )


def test_a_screened_candidate_is_not_compiled_ahead_again(tmp_path, compiled):
    import kernelevo.dispatch.local as local

    cand = tmp_path / "cand.py"
    cand.write_text(with_nonce(GOOD, f"screened-{time.time()}"))
    with local.LocalDispatcher("cpu", workers=1, store=Store(tmp_path / "s.sqlite")) as d:
        first = d.evaluate(SOFTMAX, cand, 0, screen=True)
        again = d.evaluate(SOFTMAX, cand, 0, screen=True)
        full = d.evaluate(SOFTMAX, cand, 0)
    assert first.status == again.status == "screened" and again.cached
    assert full.status == "verified" and not full.cached  # a screening never answers for it
    assert compiled == [cand, cand], compiled


def test_killed_worker_requeues_its_candidate(tmp_path):
    from kernelevo.dispatch.local import LocalDispatcher

    marker = f"started-{os.getpid()}-{time.time()}"
    cand = tmp_path / "slow.py"
    cand.write_text(slow(with_nonce(GOOD, f"kill-{time.time()}"), marker))
    store = Store(tmp_path / "s.sqlite")
    killed = []
    with LocalDispatcher("cpu", workers=2, store=store) as d:

        def kill_it():
            while not started(marker):
                time.sleep(0.05)
            ((slot, _what),) = d.in_flight()
            killed.append(slot.label)
            os.killpg(
                slot.handle.runner.proc.pid, signal.SIGKILL
            )  # the worker process dies mid-candidate

        killer = threading.Thread(target=kill_it)
        killer.start()
        verdict = d.evaluate(SOFTMAX, cand, 0)
        killer.join()
        stats = d.stats()
    assert verdict.status == "verified", verdict.reason
    assert verdict.device["attempts"] == 2 and len(killed) == 1
    assert stats["lost_workers"] == 1 and stats["requeued"] == 1
    cached = store.get_verdict(
        verdict.task_hash,
        verdict.candidate_hash,
        __import__("kernelevo.verify", fromlist=["env_key"]).env_key("cpu", "small"),
    )
    assert cached["status"] == "verified"  # the lost attempt's verdict was never cached


# -- the command line --------------------------------------------------------------------------
def cli(tmp_path, *args, env_extra=None, timeout=600):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(
        {"PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), **(env_extra or {})}
    )
    return subprocess.run(
        [sys.executable, "-m", "kernelevo", "optimize", *map(str, args)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_optimize_all_shares_workers_and_one_budget(tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("softmax", "rms_norm"):
        (tasks / f"{name}.py").write_text((EXAMPLES / f"{name}.py").read_text())
    counter = iter(range(10_000))

    def answer(req):
        rms = "rms_norm" in json.dumps(req.json)
        return kernel_reply(
            with_nonce(RMS_GOOD if rms else GOOD, f"all-{next(counter)}-{time.time()}")
        )

    with serve_anthropic(answer) as server:
        r = cli(
            tmp_path,
            tasks,
            "--all",
            "--workers",
            "2",
            "--device",
            "cpu",
            "--provider",
            "anthropic",
            "--model",
            "claude-test",
            "--iterations",
            "40",
            "--repair-tries",
            "0",
            "--concurrency",
            "2",
            "--budget-tokens",
            "30000",
            "--no-offline-seeds",
            "--json-out",
            tmp_path / "out.json",
            "--progress",
            "none",
            env_extra={"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "sk-ant-test"},
        )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads((tmp_path / "out.json").read_text())
    assert sorted(os.path.basename(s["task"]) for s in out) == ["rms_norm.py", "softmax.py"]
    assert all(
        s["candidates"].get("verified", 0) >= 1 and set(s["candidates"]) == {"verified"}
        for s in out
    )
    assert sum(s["tokens"] for s in out) <= 30000  # one budget for both, not 30000 each
    assert all("budget" in s["stop_reason"] for s in out)
    table = r.stdout
    assert (
        "softmax.py" in table
        and "rms_norm.py" in table
        and "2 targets" in table
        and "one budget: 30,000 tokens" in table
    )
    store = Store(tmp_path / ".kernelevo" / "store.sqlite")
    workers = {c["verdict"]["device"]["worker"] for s in out for c in store.candidates(s["run_id"])}
    assert workers == {"cpu0", "cpu1"}


def test_cluster_without_ray_names_the_extra(tmp_path, monkeypatch, capsys):
    from kernelevo.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if not installed
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "optimize",
            str(SOFTMAX),
            "--cluster",
            "auto",
            "--store",
            str(tmp_path / "s.sqlite"),
            "--provider",
            "offline",
        ]
    )
    assert code == 2
    assert RAY_MISSING in capsys.readouterr().err and "pip install 'kernelevo[ray]'" in RAY_MISSING


def test_bad_gpu_list_is_a_usage_error(tmp_path):
    r = cli(tmp_path, SOFTMAX, "--gpus", "0,x", timeout=60)
    assert r.returncode == 2 and "expected GPU indexes like 0,1,3" in r.stderr


def test_all_finds_every_target_of_a_user_file(tmp_path, monkeypatch, capsys):
    from kernelevo.cli import main
    from kernelevo.cli.optimize import _all_targets

    corpus = ROOT / "tests" / "corpus" / "usercode"
    monkeypatch.chdir(tmp_path)
    found, skipped = _all_targets(str(corpus / "model.py"))
    ids = {origin["target_id"] for _, origin in found}
    # built into tasks under .kernelevo/tasks; RMSNorm too, from its signature, without edits
    assert {"function:fused_bias_gelu", "module:SwiGLU", "module:RMSNorm"} <= ids
    assert all(
        path.is_file() and origin["source_file"] == str(corpus / "model.py")
        for path, origin in found
    )
    assert all(
        "\n" not in why and "@kernelevo.example" in why for why in skipped
    )  # why the others cannot be
    tasks, _ = _all_targets(str(EXAMPLES))
    assert len(tasks) == len(list(EXAMPLES.glob("*.py"))) and all(
        origin == {} for _, origin in tasks
    )
    assert main(["optimize", str(corpus / "model.py"), "--store", str(tmp_path / "s.sqlite")]) == 2
    assert "--all" in capsys.readouterr().err  # user code without a target named: say how to pick
