import sqlite3

import pytest

from kernelevo.phase import Phase
from kernelevo.store import ResultSummary, Store


def test_verdict_cache_roundtrip(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    assert s.get_verdict("t", "c", "cpu") is None
    s.put_verdict("t", "c", "cpu", {"status": "verified", "reason": "ok"})
    assert Store(tmp_path / "s.sqlite").get_verdict("t", "c", "cpu")["status"] == "verified"
    assert s.get_verdict("t", "c", "cuda:H200") is None


def test_runs_candidates_and_calls(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    rid = s.create_run(task_path="a.py", task_hash="h", config={"provider": "offline"})
    cid = s.add_candidate(
        rid,
        phase=Phase("iteration", 0),
        origin="template",
        backend="triton",
        source="x",
        candidate_hash="c1",
        verdict={"status": "verified"},
        speedup_eager=1.5,
    )
    s.add_llm_call(
        rid,
        request_hash="r",
        phase=Phase("iteration", 0),
        provider="p",
        model="m",
        prompt={"a": 1},
        response_text="t",
        usage={"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.01},
    )
    s.update_run(rid, status="done", summary={"best": cid})
    run = s.get_run(rid[:12])
    assert run is not None and run.status == "done" and run.summary == {"best": cid}
    assert [c["id"] for c in s.candidates(rid)] == [cid]
    assert s.find_llm_call(rid, Phase("iteration", 0))["output_tokens"] == 5
    assert s.find_llm_call(rid, Phase("repair", 0, 1)) is None


def test_results_latest_per_target(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    f = str(tmp_path / "model.py")
    s.put_result(
        ResultSummary(
            run_id="r1",
            source_file=f,
            target_id="T",
            status="improved",
            speedup_eager=1.2,
            created_at=1.0,
        )
    )
    s.put_result(
        ResultSummary(
            run_id="r2",
            source_file=f,
            target_id="T",
            status="improved",
            speedup_eager=2.0,
            created_at=2.0,
        )
    )
    s.put_result(
        ResultSummary(
            run_id="r3", source_file=f, target_id="U", status="no_improvement", created_at=3.0
        )
    )
    got = {r.target_id: r for r in s.results_for_file(f)}
    assert got["T"].run_id == "r2" and got["T"].speedup_eager == 2.0
    assert set(got) == {"T", "U"}


def test_version_1_store_rows_get_their_phase(tmp_path):
    """An older store encoded phases as numbers; opening it fills the phase columns."""
    import sqlite3

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript("""
    CREATE TABLE candidates (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, iteration INTEGER, parent_id INTEGER,
        origin TEXT, backend TEXT, source TEXT, candidate_hash TEXT, status TEXT, time_ms REAL, speedup_eager REAL,
        speedup_compile REAL, verdict_json TEXT, features_json TEXT, created_at REAL);
    CREATE TABLE llm_calls (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, request_hash TEXT, seq INTEGER,
        provider TEXT, model TEXT, prompt_json TEXT, response_text TEXT, input_tokens INTEGER, output_tokens INTEGER,
        cache_read_tokens INTEGER, cache_write_tokens INTEGER, cost_usd REAL, created_at REAL);
    INSERT INTO candidates (run_id, iteration, origin, status, features_json) VALUES
        ('r', -3, 'template:row_softmax', 'verified', '{"final": true, "attempt": 0}'),
        ('r', -1001, 'tune', 'verified', '{"final": true, "attempt": 4}'),
        ('r', 5, 'repair', 'incorrect', '{"final": true, "attempt": 2}'),
        ('r', 6, 'llm', 'verified', '{"final": true, "attempt": 0}');
    INSERT INTO llm_calls (run_id, seq, response_text) VALUES ('r', 502, 'a'), ('r', 600, 'b');
    """)
    db.commit()
    db.close()
    s = Store(path)
    got = [(Phase.of_row(c), c["iteration"]) for c in s.candidates("r")]
    assert got == [
        (Phase("seed", 2), None),
        (Phase("tune", 1, 4), None),
        (Phase("repair", 5, 2), 5),
        (Phase("iteration", 6), 6),
    ]
    assert s.find_llm_call("r", Phase("repair", 5, 2))["response_text"] == "a"
    assert s.find_llm_call("r", Phase("iteration", 6))["response_text"] == "b"
    assert Phase("seed", 2).label() == "seed 3"  # what people read instead of "iteration -3"


def test_statements_from_several_threads_run_one_at_a_time(tmp_path):
    """A search's evaluation threads share one Store: a statement waits while another holds the
    connection, and its rows are read in full before the next one starts."""
    import threading

    s = Store(tmp_path / "s.sqlite")
    s.put_verdict("t", "c", "cpu", {"status": "verified"})
    got: list[object] = []
    with s._db.lock:
        reader = threading.Thread(target=lambda: got.append(s.get_verdict("t", "c", "cpu")))
        reader.start()
        reader.join(0.3)
        assert reader.is_alive() and not got
    reader.join(5)
    assert got == [{"status": "verified"}]


def test_a_run_id_drawn_twice_in_one_second_is_drawn_again(tmp_path, monkeypatch):
    """600 runs in a second collide on 6 random hex digits about once in a hundred: the second
    create_run failed with 'UNIQUE constraint failed: runs.id' (seen in a full test run)."""
    import types
    import uuid

    import kernelevo.store.database as store_module

    draws = iter(["abcdef" + "0" * 26, "abcdef" + "0" * 26, "123456" + "0" * 26])
    monkeypatch.setattr(store_module.time, "strftime", lambda fmt: "20261205-013000-")
    monkeypatch.setattr(
        store_module, "uuid", types.SimpleNamespace(uuid4=lambda: uuid.UUID(next(draws)))
    )
    s = Store(tmp_path / "s.sqlite")
    first = s.create_run(task_path="a.py", task_hash="h", config={})
    second = s.create_run(task_path="b.py", task_hash="h", config={})
    assert (first, second) == ("20261205-013000-abcdef", "20261205-013000-123456")
    with pytest.raises(sqlite3.IntegrityError):  # an id the caller chose is never changed
        s.create_run(task_path="c.py", task_hash="h", config={}, run_id=first)


def test_many_threads_share_one_store(tmp_path):
    import threading

    s = Store(tmp_path / "s.sqlite")
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(100):
                rid = s.create_run(task_path=f"t{k}.py", task_hash="h", config={})
                s.put_verdict("t", f"{k}-{i}", "cpu", {"status": "verified"})
                assert s.get_verdict("t", f"{k}-{i}", "cpu") == {"status": "verified"}
                assert s.get_run(rid) is not None
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(s.list_runs(limit=1000)) == 600
