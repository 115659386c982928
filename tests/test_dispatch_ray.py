"""Evaluation workers as Ray actors, on a local Ray cluster of CPU workers: a search end to
end with an actor killed mid-candidate (the candidate is queued again and still judged), and
`kernelevo optimize --cluster`. Skipped where Ray is not installed (`pip install 'kernelevo[ray]'`)."""

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from fakes.anthropic_server import serve_anthropic  # noqa: E402
from fakes.env import clean_llm_env  # noqa: E402
from fakes.scripted_server import kernel_reply  # noqa: E402
from support import EXAMPLES  # noqa: E402
from test_dispatch_local import GOOD, slow, started, with_nonce  # noqa: E402

from kernelevo.store import Store  # noqa: E402

pytestmark = pytest.mark.xdist_group("ray")
SOFTMAX = EXAMPLES / "softmax.py"
WORKERS = 3


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(address="local", num_cpus=WORKERS, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def fake_llm(monkeypatch, tmp_path):
    """The scripted Anthropic server answers `answers` in turn."""
    clean_llm_env(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")

    def serve(answers):
        it = iter(answers)
        lock = threading.Lock()

        def answer(req):
            with lock:
                return kernel_reply(next(it))

        return serve_anthropic(answer)

    return serve


def test_search_on_ray_survives_a_killed_worker(ray_cluster, fake_llm, tmp_path):
    from kernelevo.dispatch.ray_actors import RayDispatcher
    from kernelevo.optimize import optimize_task
    from kernelevo.search.loop import SearchConfig

    marker = f"started-{os.getpid()}-{time.time()}"
    answers = [with_nonce(GOOD, f"ray-{i}-{time.time()}") for i in range(6)]
    answers[1] = slow(answers[1], marker)
    store = Store(tmp_path / "store.sqlite")
    killed = []
    with fake_llm(answers) as server, RayDispatcher("auto", device="cpu", store=store) as d:
        assert d.capacity == WORKERS

        def kill_it():
            deadline = time.monotonic() + 300
            while not started(marker) and time.monotonic() < deadline:
                time.sleep(0.05)
            for slot, path in d.in_flight():
                if marker in Path(path).read_text():
                    killed.append(slot.label)
                    os.kill(
                        slot.info["pid"], signal.SIGKILL
                    )  # the actor's process dies mid-candidate

        killer = threading.Thread(target=kill_it, daemon=True)
        killer.start()
        cfg = SearchConfig(
            backend="triton",
            provider="anthropic",
            model="claude-test",
            base_url=server.base_url,
            iterations=6,
            concurrency=WORKERS,
            repair_tries=0,
            device="cpu",
            offline_seeds=False,
        )
        result = optimize_task(SOFTMAX, cfg, store=store, dispatcher=d)
        killer.join(timeout=10)
        deadline = time.monotonic() + 120
        while len(d.pool) < WORKERS and time.monotonic() < deadline:
            time.sleep(0.2)
        stats = d.stats()
    assert len(killed) == 1
    rows = store.candidates(result.run_id)
    assert len(rows) == 6 and [r["status"] for r in rows] == ["verified"] * 6  # nothing lost
    slow_row = next(r for r in rows if marker in r["source"])
    where = slow_row["verdict"]["device"]
    assert where["attempts"] == 2 and where["worker"] != killed[0]
    assert len({r["verdict"]["device"]["worker"] for r in rows}) >= 2  # spread over the actors
    assert stats["lost_actors"] == 1 and stats["requeued"] == 1
    assert stats["workers"] == WORKERS  # the lost actor was replaced


def test_optimize_cli_on_a_ray_cluster(ray_cluster, fake_llm, tmp_path, monkeypatch, capsys):
    from kernelevo.cli import main

    monkeypatch.chdir(tmp_path)
    answers = [with_nonce(GOOD, f"cli-{i}-{time.time()}") for i in range(4)]
    with fake_llm(answers) as server:
        code = main(
            [
                "optimize",
                str(SOFTMAX),
                "--cluster",
                "auto",
                "--workers",
                "2",
                "--device",
                "cpu",
                "--provider",
                "anthropic",
                "--model",
                "claude-test",
                "--base-url",
                server.base_url,
                "--iterations",
                "4",
                "--repair-tries",
                "0",
                "--no-offline-seeds",
                "--progress",
                "json",
                "--json-out",
                str(tmp_path / "out.json"),
                "--store",
                str(tmp_path / "s.sqlite"),
            ]
        )
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    events = [
        json.loads(line) for line in captured.out.splitlines() if line.strip()
    ]  # stdout is JSON only
    assert events[0]["event"] == "start" and events[-1]["event"] == "done"
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["candidates"] == {"verified": 4}
    rows = Store(tmp_path / "s.sqlite").candidates(out["run_id"])
    assert (
        len({r["verdict"]["device"]["worker"] for r in rows}) == 2
    )  # --workers 2, concurrency follows
    assert all(r["verdict"]["device"]["host"] for r in rows)
