"""bench/gpu_bench.py: each benchmark's last printed line becomes its table row, and the table
replaces only the part of docs/BENCHMARKS.md between its markers."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gpu_bench", REPO / "bench" / "gpu_bench.py")
gpu_bench = importlib.util.module_from_spec(spec)
sys.modules["gpu_bench"] = gpu_bench  # dataclasses look their module up
spec.loader.exec_module(gpu_bench)


def test_a_run_keeps_the_last_line_and_the_whole_output(tmp_path):
    bench = gpu_bench.Bench("two_lines", "echo warming up; echo 'speedup 1.52x | p50 3 ms'", 30)
    r = gpu_bench.run(bench, tmp_path, gpus=1)
    assert r.rc == 0 and r.figures == "speedup 1.52x | p50 3 ms"
    assert "warming up" in (tmp_path / "two_lines.txt").read_text()
    row = gpu_bench.table({"date": "d", "gpu": "g", "commit": "c"}, [r]).splitlines()[-1]
    assert row.endswith("| speedup 1.52x \\| p50 3 ms |")  # a | in a figure does not split the row


def test_a_failure_a_time_limit_and_too_few_gpus_are_rows_too(tmp_path):
    failed = gpu_bench.run(
        gpu_bench.Bench("f", "echo out; echo 'no GPU' >&2; exit 3", 30), tmp_path, 1
    )
    assert failed.rc == 3 and failed.figures == "no GPU"
    slow = gpu_bench.run(gpu_bench.Bench("s", "echo started; sleep 30", 1), tmp_path, 1)
    assert slow.rc == 124 and slow.figures == "ran past 1 s"
    two = gpu_bench.run(gpu_bench.Bench("scale", "true", 30, gpus=2), tmp_path, 1)
    assert two.rc is None and "needs 2 GPUs" in two.figures


def test_the_table_replaces_only_what_is_between_the_markers(tmp_path):
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text(f"# B\nintro\n{gpu_bench.BEGIN}\nold table\n{gpu_bench.END}\n## History\nkept\n")
    gpu_bench.write_doc("new table\n", doc)
    assert (
        doc.read_text()
        == f"# B\nintro\n{gpu_bench.BEGIN}\nnew table\n{gpu_bench.END}\n## History\nkept\n"
    )
    doc.write_text("# no markers\n")
    with pytest.raises(SystemExit, match="markers"):
        gpu_bench.write_doc("t\n", doc)


def test_the_table_is_rebuilt_from_a_saved_run(tmp_path, capsys):
    saved = {
        "machine": {"date": "2026-12-01 20:00 UTC", "gpu": "NVIDIA H200, 580", "commit": "abc1234"},
        "results": [
            {"name": "faults", "command": "x", "rc": 0, "seconds": 2.0, "figures": "9/9 caught"}
        ],
    }
    (tmp_path / "run.json").write_text(json.dumps(saved))
    assert gpu_bench.main(["--table", str(tmp_path / "run.json")]) == 0
    out = capsys.readouterr().out
    assert (
        "NVIDIA H200, 580, commit abc1234" in out and "| faults | `x` | 0 | 2 | 9/9 caught |" in out
    )


def test_the_real_docs_page_has_the_markers():
    page = (REPO / "docs" / "BENCHMARKS.md").read_text()
    assert page.index(gpu_bench.BEGIN) < page.index(gpu_bench.END)


def test_every_benchmark_names_files_that_exist_and_a_time_limit():
    names = [b.name for b in gpu_bench.BENCHES]
    assert len(names) == len(set(names))
    for bench in gpu_bench.BENCHES:
        assert 0 < bench.limit_s <= 600, bench.name
        paths = [w for w in bench.command.split() if w.startswith(("bench/", "tests/"))]
        assert paths, bench.name
        for path in paths:
            assert (REPO / path.split("::")[0]).exists(), f"{bench.name}: {path} is gone"


def test_no_one_off_batch_script_is_left_in_bench():
    kept = {"gpu_env.sh", "sandbox_tools.sh"}  # sourced by every GPU run; builds bubblewrap for it
    assert {p.name for p in (REPO / "bench").glob("*.sh")} == kept


def test_a_benchmark_whose_package_is_missing_is_a_row_not_a_failure(tmp_path):
    bench = gpu_bench.Bench("lsp", "exit 9", 30, gpus=0, needs=("no_such_package_kernelevo",))
    r = gpu_bench.run(bench, tmp_path, gpus=0)
    assert r.rc is None and "no no_such_package_kernelevo here" in r.figures
    present = gpu_bench.run(
        gpu_bench.Bench("j", "echo ok", 30, gpus=0, needs=("json",)), tmp_path, 0
    )
    assert present.rc == 0 and present.figures == "ok"


def test_python3_in_a_command_is_the_interpreter_running_the_benchmarks(tmp_path):
    bench = gpu_bench.Bench("which", 'python3 -c "import sys; print(sys.prefix)"', 30, gpus=0)
    assert gpu_bench.run(bench, tmp_path, gpus=0).figures == sys.prefix


def test_a_command_of_two_pytest_sessions_keeps_both_counts(tmp_path):
    both = (
        "echo '100 passed, 1 skipped in 280.77s (0:04:40)'; echo 'warn';"
        " echo '4 passed, 9 deselected in 9.11s'; echo 'a warning'"
    )
    r = gpu_bench.run(gpu_bench.Bench("gpu_tests", both, 30), tmp_path, gpus=1)
    assert (
        r.figures == "100 passed, 1 skipped in 280.77s (0:04:40) · 4 passed, 9 deselected in 9.11s"
    )
    one = gpu_bench.run(
        gpu_bench.Bench("one", "echo '3 passed in 1.0s'; echo done", 30), tmp_path, 1
    )
    assert one.figures == "done"  # one session: still the last line


def _save(folder, date, commit, results, outputs=None):
    folder.mkdir(parents=True)
    run = {
        "machine": {"date": date, "gpu": "NVIDIA H200, 580", "commit": commit},
        "results": results,
    }
    (folder / "gpu_bench.json").write_text(json.dumps(run))
    for name, text in (outputs or {}).items():
        (folder / f"{name}.txt").write_text(text)
    return str(folder / "gpu_bench.json")


def _row(name, figures):
    return {"name": name, "command": f"run {name}", "rc": 0, "seconds": 1.0, "figures": figures}


def test_the_table_of_several_runs_keeps_the_newest_row_of_each_benchmark(tmp_path, capsys):
    old = _save(
        tmp_path / "a",
        "2026-12-01 10:00 UTC",
        "old1111",
        [_row("adversarial", "20 passed"), _row("faults", "9/9 caught")],
    )
    new = _save(
        tmp_path / "b",
        "2026-12-04 21:03 UTC",
        "new2222",
        [_row("gpu_tests", "4 passed, 100 deselected in 9.11s"), _row("adversarial", "22 passed")],
        {
            "gpu_tests": "103 passed, 1 skipped in 280.77s\nwarn\n4 passed, 100 deselected in 9.11s\nw\n"
        },
    )
    assert gpu_bench.main(["--table", new, old]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    assert [r.split(" | ")[0] for r in rows] == ["| gpu_tests", "| adversarial", "| faults"]
    assert "new2222" in rows[1] and rows[1].endswith("| 22 passed |")
    assert "old1111" in rows[2] and rows[2].endswith("| 9/9 caught |")
    # a saved run's figures are read again from its output beside it: both sessions' counts
    assert rows[0].endswith(
        "| 103 passed, 1 skipped in 280.77s · 4 passed, 100 deselected in 9.11s |"
    )
