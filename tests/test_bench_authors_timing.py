"""bench/authors_timing.py: a replayed kernel timed by its authors' protocol in a sandboxed process
(here on the CPU, Triton interpreted), and the report that sets it beside ours."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from support import CANDIDATES, EXAMPLES

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location(
    "authors_timing", REPO / "bench" / "authors_timing.py"
)
authors_timing = importlib.util.module_from_spec(spec)
spec.loader.exec_module(authors_timing)


def test_a_kernel_is_timed_by_the_authors_protocol_in_its_own_process(tmp_path):
    task = tmp_path / "bias_gelu_scale_small.py"
    text = (EXAMPLES / "bias_gelu_scale.py").read_text()
    task.write_text(
        text.replace("batch_size = 8192", "batch_size = 4").replace("dim = 8192", "dim = 64")
    )
    row = {"task": str(task), "candidate": str(CANDIDATES / "bias_gelu_scale" / "triton_ok.py")}
    got = authors_timing.profile(row, 240, device="cpu")
    assert "error" not in got, got
    assert got["eager_ms"] > 0 and got["candidate_ms"] > 0
    assert got["speedup"] == got["eager_ms"] / got["candidate_ms"]


def test_a_candidate_that_fails_is_reported_on_its_row(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("raise SystemExit('no kernel here')\n")
    row = {"task": str(EXAMPLES / "bias_gelu_scale.py"), "candidate": str(broken)}
    got = authors_timing.profile(row, 120, device="cpu")
    assert "no kernel here" in got["error"]


def test_the_report_counts_each_protocol_within_ten_percent_of_the_authors():
    rows = [
        {
            "id": "a",
            "author_speedup": 2.0,
            "speedup": 1.5,
            "authors_protocol": {"speedup": 2.1, "eager_ms": 1.0},
        },
        {
            "id": "b",
            "author_speedup": 1.0,
            "speedup": 1.05,
            "authors_protocol": {"speedup": 0.8, "eager_ms": 1.0},
        },
        {"id": "c", "author_speedup": 1.0, "speedup": 1.0, "authors_protocol": {"error": "hung"}},
    ]
    text = authors_timing.report(rows)
    assert "2 kernels timed both ways (1 failed in the authors' protocol)" in text
    assert "our protocol / authors' figure: geomean 0.887, 1 within ±10 %" in text
    assert "authors' protocol here / authors' figure: geomean 0.917, 1 within ±10 %" in text
