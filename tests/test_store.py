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
    cid = s.add_candidate(rid, iteration=0, origin="template", backend="triton", source="x", candidate_hash="c1",
                          verdict={"status": "verified"}, speedup_eager=1.5)
    s.add_llm_call(rid, request_hash="r", seq=0, provider="p", model="m", prompt={"a": 1}, response_text="t",
                   usage={"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.01})
    s.update_run(rid, status="done", summary={"best": cid})
    run = s.get_run(rid[:12])
    assert run is not None and run.status == "done" and run.summary == {"best": cid}
    assert [c["id"] for c in s.candidates(rid)] == [cid]
    assert s.find_llm_call(rid, 0)["output_tokens"] == 5
    assert s.find_llm_call(rid, 1) is None


def test_results_latest_per_target(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    f = str(tmp_path / "model.py")
    s.put_result(ResultSummary(run_id="r1", source_file=f, target_id="T", status="improved", speedup_eager=1.2,
                               created_at=1.0))
    s.put_result(ResultSummary(run_id="r2", source_file=f, target_id="T", status="improved", speedup_eager=2.0,
                               created_at=2.0))
    s.put_result(ResultSummary(run_id="r3", source_file=f, target_id="U", status="no_improvement", created_at=3.0))
    got = {r.target_id: r for r in s.results_for_file(f)}
    assert got["T"].run_id == "r2" and got["T"].speedup_eager == 2.0
    assert set(got) == {"T", "U"}
