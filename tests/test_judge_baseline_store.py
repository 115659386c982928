"""Baselines kept on disk (kernelevo/judge/baseline_store.py): read back only under their own key,
never from a folder a sandboxed worker can write, and taken by the judge without timing again."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevo.judge import baseline_store


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELEVO_STATE", str(tmp_path / "state"))
    return tmp_path / "state"


BASE = {
    "eager": {"median_ms": 1.5},
    "compile": None,
    "work": {"bytes": 8},
    "tf32": False,
    "cached": False,
    "stored": False,
}


def test_saved_baselines_are_read_back_under_their_key_only(state):
    baseline_store.save("task|default|H200|torch 2.11|triton 3.6|default", BASE)
    got = baseline_store.load("task|default|H200|torch 2.11|triton 3.6|default")
    assert got == {k: v for k, v in BASE.items() if k not in ("cached", "stored")}
    assert baseline_store.load("task|default|H100|torch 2.11|triton 3.6|default") is None
    for f in state.glob("baselines/*.json"):
        f.write_text("{not json")
    assert baseline_store.load("task|default|H200|torch 2.11|triton 3.6|default") is None


def test_no_sandboxed_worker_can_write_where_baselines_are_kept(monkeypatch, tmp_path):
    from kernelevo.worker.pool import cache_dirs

    monkeypatch.delenv("KERNELEVO_STATE")
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("XDG_STATE_HOME", "XDG_CACHE_HOME", "KERNELEVO_CACHE", "TRITON_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)
    where = baseline_store.baseline_dir().resolve()
    for writable in cache_dirs().values():
        assert not where.is_relative_to(Path(writable).resolve()), (where, writable)


def test_the_judge_takes_stored_baselines_without_timing(monkeypatch, tmp_path):
    import kernelevo.judge.baselines as timed_here
    from kernelevo.judge import requests as rq
    from kernelevo.judge.process import Judge

    monkeypatch.setattr(timed_here, "time_baselines", lambda *a: pytest.fail("timed again"))
    j = Judge()
    from types import SimpleNamespace

    j.ref = SimpleNamespace(model=object())  # a loaded reference; stored baselines need no more
    reply = j.op_baselines(rq.Baselines(key="k", stored=dict(BASE, eager={"median_ms": 2.5})))
    assert reply.stored and reply.cached and reply.eager["median_ms"] == 2.5
    again = j.op_baselines(rq.Baselines(key="k"))
    assert again.eager["median_ms"] == 2.5 and again.cached and not again.stored


def test_a_passed_task_probe_is_kept_beside_the_baselines_and_only_when_sandboxed(
    tmp_path, monkeypatch
):
    """A new process skips the probe of a task (content, size, machine) that passed it before;
    nothing is kept when candidates ran unsandboxed (one could have written the folder)."""
    from types import SimpleNamespace

    monkeypatch.setenv("KERNELEVO_STATE", str(tmp_path / "state"))
    task = SimpleNamespace(hash="abc123")

    def session(isolation, size="small"):
        ev = SimpleNamespace(runner=SimpleNamespace(isolation=isolation))
        return SimpleNamespace(ev=ev, task=task, size=size, device="cpu")

    key = baseline_store.probe_key(session("sandbox"))
    assert key is not None and baseline_store.load(key, "probe") is None
    baseline_store.save(key, {"probed": True}, "probe")
    assert baseline_store.load(key, "probe") == {"probed": True}
    assert baseline_store.load(key) is None  # not taken for baselines
    assert (
        baseline_store.load(baseline_store.probe_key(session("sandbox", "default")), "probe")
        is None
    )
    assert baseline_store.probe_key(session("none")) is None


def test_a_new_process_does_not_probe_a_task_that_passed_before(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from kernelevo.judge.session import Session
    from kernelevo.task import read_task

    monkeypatch.setenv("KERNELEVO_STATE", str(tmp_path / "state"))
    asked: list[str] = []

    class Judge:  # answers like the judge process, counting what it is asked
        def request(self, message, timeout):
            asked.append(message["op"])
            return {
                "nonce": message["nonce"],
                "probed": True,
                "need_gib": 0.01,
                "device_gib": 24.0,
                "need": [1024, 2048, 0],
                "n_extra": 2,
            }

    ev = SimpleNamespace(judge=Judge(), runner=SimpleNamespace(isolation="sandbox"))
    task = read_task(Path(__file__).resolve().parents[1] / "examples" / "softmax.py")
    known = []
    for _ in range(2):  # two engine processes in turn
        session = Session(task, Path(task.path), "reference", ev, "cpu", "small", 10, 1)
        session.probe()
        known.append(session.known)
    assert asked == ["probe"]
    # the second tells its judge's Begin the need and extra shapes, so the judge need not measure
    assert known == [{"need": [1024, 2048, 0], "n_extra": 2}] * 2
