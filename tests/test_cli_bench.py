"""`kernelevo bench`: the table and JSON built from measurements, and what happens without a GPU.

The GPU path itself runs in tests/gpu/test_verify_gpu.py; here the rows are built from
measure replies shaped like the worker's, so the arithmetic is checked on the CPU.
"""

import json
import os
import subprocess
import sys

import pytest
from support import CANDIDATES, EXAMPLES, HAS_GPU, ROOT

from kernelevo.cli.bench import candidate_timing, format_table, reference_rows
from kernelevo.measure.roofline import roofline
from kernelevo.measure.timing import summarize

SOFTMAX = EXAMPLES / "softmax.py"
BYTES = 2 * 8192 * 8192 * 4


def _reply(
    cand_ms: float, eager_ms: float = 0.5, compile_ms: float | None = 0.25, implausible: str = ""
) -> dict:
    rl = roofline(BYTES, None, cand_ms, peak_gbps=4000.0, peak_tflops=50.0)
    ref = roofline(BYTES, None, eager_ms, peak_gbps=4000.0, peak_tflops=50.0)
    detail = {
        "candidate": summarize([cand_ms * f for f in (0.99, 1.0, 1.01)]).to_dict(),
        "eager": summarize([eager_ms] * 3).to_dict(),
    }
    if compile_ms:
        detail["compile"] = summarize([compile_ms] * 3).to_dict()
    t = {
        "candidate_ms": cand_ms,
        "eager_ms": eager_ms,
        "compile_ms": compile_ms,
        "speedup_eager": None if implausible else eager_ms / cand_ms,
        "speedup_compile": None if implausible or not compile_ms else compile_ms / cand_ms,
        "detail": detail,
        "compile_mode": "default",
        "compile_error": None if compile_ms else "boom",
    }
    if implausible:
        t["implausible"] = implausible
    return {
        "timings": t,
        "roofline": {**rl.to_dict(), "reference": ref.to_dict(), "plausible": not implausible},
        "device": {"name": "Fake GPU"},
    }


def test_reference_rows_eager_and_compile():
    rows = reference_rows(_reply(0.5, 0.5, 0.25), "default")
    eager, comp = rows
    assert (
        eager["median_ms"] == 0.5
        and eager["speedup_eager"] == 1.0
        and eager["speedup_compile"] == 0.5
    )
    assert (
        comp["median_ms"] == 0.25
        and comp["speedup_eager"] == 2.0
        and comp["speedup_compile"] == 1.0
    )
    assert comp["achieved_gbps"] == pytest.approx(BYTES / 0.25e-3 / 1e9)
    assert comp["roofline_fraction"] == pytest.approx(BYTES / 4000e9 * 1e3 / 0.25)
    assert comp["bound"] == "memory"


def test_reference_rows_report_a_failed_compile_and_no_compile():
    rows = reference_rows(_reply(0.5, 0.5, None), "max-autotune")
    assert rows[1]["status"] == "runtime_error" and "boom" in rows[1]["reason"]
    assert len(reference_rows(_reply(0.5, 0.5, None), None)) == 1
    failed = reference_rows({"error": "CUDA error: out of memory"}, "default")
    assert failed[0]["status"] == "runtime_error" and "out of memory" in failed[0]["reason"]


def test_candidate_row_and_implausible_time_is_rejected():
    row = candidate_timing(_reply(0.2))
    assert row["median_ms"] == 0.2 and row["speedup_eager"] == pytest.approx(2.5)
    assert row["speedup_compile"] == pytest.approx(1.25) and 0 < row["roofline_fraction"] < 1
    assert "status" not in row
    bad = candidate_timing(_reply(0.01, implausible="faster than physically possible: ..."))
    assert (
        bad["status"] == "rejected"
        and "physically" in bad["reason"]
        and bad["roofline_fraction"] > 1
    )


def test_table_has_every_column_and_notes():
    report = {
        "task": "examples/softmax.py",
        "device": "cuda",
        "size": "default",
        "compile_mode": "default",
        "device_info": {"name": "Fake GPU"},
        "rows": [
            *reference_rows(_reply(0.5), "default"),
            {
                "name": "fast",
                "kind": "candidate",
                "status": "verified",
                "reason": "ok",
                **candidate_timing(_reply(0.2)),
            },
            {
                "name": "broken",
                "kind": "candidate",
                "status": "incorrect",
                "reason": "input set 1: mismatch",
            },
        ],
    }
    text = format_table(report)
    for word in (
        "name",
        "status",
        "median ms",
        "spread",
        "vs eager",
        "vs compile",
        "achieved",
        "roofline",
        "eager (reference)",
        "torch.compile (default)",
        "0.2000",
        "2.50x",
        "1.25x",
        "GB/s",
        "Fake GPU",
    ):
        assert word in text, (word, text)
    assert "broken: input set 1: mismatch" in text


def _kv(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KERNELEVO_FORCE_CPU": "1"}
    return subprocess.run(
        [sys.executable, "-m", "kernelevo", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU behaviour")
def test_without_gpu_verifies_then_exits_2(tmp_path):
    r = _kv(
        "bench",
        SOFTMAX,
        CANDIDATES / "softmax" / "triton_ok.py",
        CANDIDATES / "hacks" / "no_kernel_torch.py",
        "--json",
    )
    assert r.returncode == 2, r.stderr
    out = json.loads(r.stdout)
    assert out["speed_measured"] is False
    assert [row["status"] for row in out["rows"]] == ["verified", "rejected"]
    assert "speed not measured" in r.stderr


@pytest.mark.parametrize(
    "bad", ["task", "candidate", "max_time", "timeout", "seed", "not_utf8", "folder"]
)
def test_bad_input_one_line_exit_2(tmp_path, bad):
    (tmp_path / "latin1.py").write_bytes(b"# caf\xe9\nimport torch\n")
    (tmp_path / "adir.py").mkdir()
    args, said = {
        "task": (("bench", tmp_path / "nope.py"), "no such task file"),
        "candidate": (("bench", SOFTMAX, tmp_path / "missing.py"), "no such candidate file"),
        "max_time": (("bench", SOFTMAX, "--max-time", "0"), "must be a positive number of seconds"),
        "timeout": (("bench", SOFTMAX, "--timeout", "inf"), "must be a positive number of seconds"),
        "seed": (("bench", SOFTMAX, "--seed", "1" + "0" * 20), "from 0 to 2**63-1"),
        "not_utf8": (
            ("bench", SOFTMAX, tmp_path / "latin1.py"),
            f"{tmp_path / 'latin1.py'}: not UTF-8 text (byte 0xe9 on line 1); save it as UTF-8",
        ),
        "folder": (("bench", SOFTMAX, tmp_path / "adir.py"), "adir.py is a folder, not a file"),
    }[bad]
    r = _kv(*args)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(("kernelevo: error:", "kernelevo bench: error:"))
    assert said in lines[0], r.stderr
