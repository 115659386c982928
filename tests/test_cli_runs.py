"""`kernelevo runs/show/export/report` on a store written the way a search writes it."""

import json

import pytest

from kernelevo.cli import main
from kernelevo.phase import Phase
from kernelevo.store import Store


@pytest.fixture
def store_with_run(tmp_path):
    s = Store(tmp_path / "s.sqlite")
    rid = s.create_run(
        task_path="examples/softmax.py",
        task_hash="h",
        config={"provider": "anthropic", "model": "m", "backend": "triton", "device": "cuda"},
    )
    s.add_candidate(
        rid,
        phase=Phase("iteration", 0),
        origin="llm",
        backend="triton",
        source="bad",
        candidate_hash="a",
        verdict={"status": "incorrect", "reason": "mismatch"},
    )
    best = s.add_candidate(
        rid,
        phase=Phase("iteration", 1),
        origin="llm",
        backend="triton",
        source="class ModelNew: pass\n",
        candidate_hash="b",
        verdict={
            "status": "verified",
            "reason": "ok",
            "roofline": {"bound": "memory", "bw_fraction": 0.8},
        },
        time_ms=0.5,
        speedup_eager=1.8,
        speedup_compile=1.1,
    )
    s.add_llm_call(
        rid,
        request_hash="r",
        phase=Phase("iteration", 0),
        provider="anthropic",
        model="m",
        prompt={},
        response_text="x",
        usage={"input_tokens": 100, "output_tokens": 50, "cost_usd": 0.01},
    )
    s.update_run(
        rid,
        status="done",
        summary={
            "status": "improved",
            "best_candidate": best,
            "speedup_eager": 1.8,
            "speedup_compile": 1.1,
            "usage": {"tokens": 150, "cost_usd": 0.01},
            "counts": {"verified": 1, "incorrect": 1},
            "stop_reason": "budget",
        },
    )
    return tmp_path, s, rid


def test_runs_and_show(store_with_run, capsys):
    _tmp, s, rid = store_with_run
    assert main(["runs", "--store", str(s.path)]) == 0
    assert rid in capsys.readouterr().out
    assert main(["show", rid, "--store", str(s.path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["run"]["id"] == rid and len(data["candidates"]) == 2


def test_show_keeps_its_columns_aligned_for_long_origins(store_with_run, capsys):
    _, s, rid = store_with_run
    s.add_candidate(
        rid,
        phase=Phase("seed", 2),
        origin="template:rms_norm_looped",
        backend="triton",
        source="x",
        candidate_hash="c",
        verdict={"status": "verified", "reason": "outputs match"},
    )
    assert main(["show", rid, "--store", str(s.path)]) == 0
    rows = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  #")]
    assert len(rows) == 3 and "None" not in "".join(rows)
    assert len({ln.index("triton") for ln in rows}) == 1  # the backend column starts at one place
    assert "not timed" in rows[-1] and "1.80x" in rows[1]


def test_export_writes_best_and_never_overwrites(store_with_run, capsys):
    tmp, s, rid = store_with_run
    out = tmp / "best.py"
    assert main(["export", rid, "-o", str(out), "--store", str(s.path)]) == 0
    assert out.read_text() == "class ModelNew: pass\n"
    out.write_text("user's own work")
    assert main(["export", rid, "-o", str(out), "--store", str(s.path)]) == 2
    assert out.read_text() == "user's own work"
    assert "exists" in capsys.readouterr().err


def test_report_is_self_contained_html(store_with_run):
    tmp, s, rid = store_with_run
    out = tmp / "r.html"
    assert main(["report", rid, "-o", str(out), "--store", str(s.path)]) == 0
    text = out.read_text()
    assert "<svg" in text and "1.80x" in text and "class ModelNew" in text
    assert "http://" not in text and "https://" not in text and "<script" not in text


def test_unknown_run_is_a_clear_error(store_with_run, capsys):
    _tmp, s, _rid = store_with_run
    assert main(["show", "nope", "--store", str(s.path)]) == 2
    assert "kernelevo runs" in capsys.readouterr().err


def test_report_says_not_measured_for_candidates_verified_without_timing(tmp_path):
    from kernelevo.phase import Phase
    from kernelevo.report import render_report
    from kernelevo.store import Store

    store = Store(tmp_path / "store.sqlite")
    run_id = store.create_run(
        task_path=str(tmp_path / "t.py"), task_hash="h", config={"provider": "offline"}
    )
    store.add_candidate(
        run_id,
        phase=Phase("seed", 0, 0),
        origin="template:x",
        backend="triton",
        source="x = 1",
        candidate_hash="c",
        verdict={"status": "verified", "reason": "ok"},
    )
    html = render_report(store.get_run(run_id), store.candidates(run_id), store.llm_calls(run_id))
    assert "not measured" in html and "0.0000" not in html and "0.00x" not in html


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("99999999999999999999999", "must be at most 2**63-1"),
        ("0", "must be 1 or more"),
        ("-3", "must be 1 or more"),
        ("ten", "expected a whole number, e.g. 20"),
    ],
)
def test_runs_limit_out_of_range_is_one_line(store_with_run, capsys, value, said):
    """A limit past SQLite's integers crashed with OverflowError; 0 and negatives listed nothing
    or everything."""
    _tmp, s, _rid = store_with_run
    with pytest.raises(SystemExit) as exc:
        main(["runs", "--store", str(s.path), "--limit", value])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    shown = repr(value) if said.startswith("expected") else value
    assert f"argument --limit: {shown}: {said}" in err
