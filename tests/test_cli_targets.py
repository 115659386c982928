"""`kernelevo detect` and `kernelevo task` from the command line."""

import json
from pathlib import Path

import pytest

from kernelevo.cli import main

CORPUS = Path(__file__).parent / "corpus" / "usercode"


def test_detect_lists_targets_and_errors(capsys):
    # a syntax error: what was found is still listed, and the exit code says the file is broken
    assert main(["detect", str(CORPUS / "broken.py"), str(CORPUS / "triton_ops.py")]) == 1
    captured = capsys.readouterr()
    out, err = captured.out.splitlines(), captured.err.splitlines()
    assert (
        err[0]
        == f"{CORPUS / 'broken.py'}:19: invalid syntax (targets in the rest of the file are still listed)"
    )
    assert any(
        line.startswith(f"{CORPUS / 'broken.py'}:6-14  module") and "module:GatedMLP" in line
        for line in out
    )
    assert any("triton_launcher" in line and "FusedRMSNorm.forward" in line for line in out)
    assert out[-1].startswith("next: `kernelevo task ")


def test_detect_refuses_files_that_are_not_source(capsys, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n\nimport torch is not code here\n")
    assert main(["detect", str(readme)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a Python or CUDA file" in err


def test_argument_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["optimize", "model.py::f", "--iterations", "-2"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--iterations: -2: must be 1 or more" in err


def test_a_closed_pipe_ends_quietly(tmp_path):
    import subprocess
    import sys

    from support import ROOT

    code = (
        "import sys, os; sys.argv=['kernelevo','detect'] + ["
        + repr(str(CORPUS / "model.py"))
        + "] * 3000; "
        "from kernelevo.cli import main; raise SystemExit(main())"
    )
    proc = subprocess.run(
        f'{sys.executable} -c "{code}" | head -1',
        shell=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert (
        proc.stdout.count("\n") == 1
        and "Traceback" not in proc.stderr
        and "BrokenPipe" not in proc.stderr
    )


def test_detect_json(capsys):
    assert (
        main(
            ["detect", "--json", str(CORPUS / "model.py"), str(CORPUS / "ext" / "scale_kernel.cu")]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert [d["path"] for d in data] == [
        str(CORPUS / "model.py"),
        str(CORPUS / "ext" / "scale_kernel.cu"),
    ]
    rms = next(t for t in data[0]["targets"] if t["id"] == "module:RMSNorm")
    assert (rms["start_line"], rms["end_line"], rms["kind"]) == (53, 64, "module")
    assert data[1]["targets"][0]["id"] == "cuda_file:row_scale_kernel" and data[0]["errors"] == []


def test_detect_missing_file_is_a_user_error(capsys, tmp_path):
    assert main(["detect", str(tmp_path / "nope.py")]) == 2
    assert "nope.py: no such file" in capsys.readouterr().err


def test_task_builds_and_checks(capsys, tmp_path):
    assert main(["task", f"{CORPUS / 'kernelbench_style.py'}::Model", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"task: {tmp_path / 'kernelbench_style__Model__'}" in out and "check ok" in out
    assert list(tmp_path.glob("kernelbench_style__Model__*.py"))


def test_task_errors_are_one_line(capsys, tmp_path):
    user = tmp_path / "wrapped.py"
    user.write_text(
        "import torch\nfrom torch import nn\n\n\nclass Wrapped(nn.Module):\n"
        "    def __init__(self, inner: nn.Module):\n        super().__init__()\n        self.inner = inner\n\n"
        "    def forward(self, x):\n        return torch.relu(self.inner(x))\n"
    )
    assert main(["task", f"{user}::Wrapped", "--out", str(tmp_path), "--timeout", "60"]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "add `@kernelevo.example(lambda: (torch.randn(8, 1024),), init=lambda: (torch.nn.Identity(),))`"
        in err
    )
    assert main(["task", str(CORPUS / "model.py")]) == 2
    assert "expected FILE::NAME" in capsys.readouterr().err


def test_an_empty_path_is_said_to_be_one(capsys, tmp_path):
    """A script's unset variable gave `kernelevo verify task.py ""` ": no such candidate file"."""
    from support import ROOT

    task = tmp_path / "softmax.py"
    task.write_text((ROOT / "examples" / "softmax.py").read_text())
    assert main(["verify", str(task), ""]) == 2
    assert capsys.readouterr().err.startswith(
        "kernelevo: error: '' (an empty path): no such candidate file"
    )
    assert main(["task", ""]) == 2
    assert capsys.readouterr().err.startswith("kernelevo: error: '': expected FILE::NAME")


def test_optimize_of_a_file_that_is_no_task_is_refused_before_the_search(capsys, tmp_path):
    """`kernelevo optimize README.md` printed "searching README.md..." before its syntax error."""
    notes = tmp_path / "README.md"
    notes.write_text("# Notes\n\nIt's a file about kernels.\n")
    store = str(tmp_path / "s.sqlite")
    assert main(["optimize", str(notes), "--store", store, "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "searching" not in err, err
    assert "syntax error" in err and "a task file defines class Model and get_inputs()" in err


def test_an_unexpected_failure_is_one_line_not_a_traceback(capsys, tmp_path, monkeypatch):
    from kernelevo import report
    from kernelevo.store import Store

    store = Store(tmp_path / "store.sqlite")
    run_id = store.create_run(task_path=str(tmp_path / "t.py"), task_hash="h", config={})

    def broken(*_args):
        raise KeyError("speedup")

    monkeypatch.setattr(report, "render_report", broken)
    code = main(
        [
            "report",
            run_id,
            "--store",
            str(tmp_path / "store.sqlite"),
            "-o",
            str(tmp_path / "r.html"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "report failed: KeyError" in err
    assert "KERNELEVO_DEBUG=1" in err


def test_report_keeps_a_file_it_did_not_write(capsys, tmp_path):
    from kernelevo.store import Store

    store = Store(tmp_path / "store.sqlite")
    run_id = store.create_run(task_path=str(tmp_path / "t.py"), task_hash="h", config={})
    args = ["report", run_id, "--store", str(tmp_path / "store.sqlite"), "-o"]
    mine = tmp_path / "index.html"
    mine.write_text("my page")
    assert main([*args, str(mine)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a KernelEvo report; pass --force" in err
    assert mine.read_text() == "my page"
    assert main([*args, str(tmp_path / "no" / "dir.html")]) == 2
    assert "no folder" in capsys.readouterr().err
    ours = tmp_path / "report.html"
    assert main([*args, str(ours)]) == 0 and main([*args, str(ours)]) == 0  # regenerated
    assert main([*args, str(mine), "--force"]) == 0 and "KernelEvo run" in mine.read_text()


def test_task_out_that_cannot_be_written_is_one_line(capsys, tmp_path):
    spec = f"{CORPUS / 'kernelbench_style.py'}::Model"
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert main(["task", spec, "--out", str(a_file), "--no-check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file; --out names the folder" in err
    assert main(["task", spec, "--out", "/proc/kernelevo-tasks", "--no-check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write the task there" in err
    named_like_a_file = tmp_path / "task.py"
    assert main(["task", spec, "--out", str(named_like_a_file), "--no-check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"give --out {tmp_path}" in err
    assert not named_like_a_file.exists()  # no folder named like a file left behind


def test_an_unwritable_json_out_is_refused_before_the_search(capsys, tmp_path):
    store = tmp_path / "store.sqlite"
    spec = f"{CORPUS / 'kernelbench_style.py'}::Model"
    for out, said in ((tmp_path / "no" / "s.json", "no folder"), (tmp_path, "is a folder")):
        assert main(["optimize", spec, "--store", str(store), "--json-out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and "--json-out" in err
    assert not store.exists()  # refused before anything started


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["task", "m.py::f", "--timeout", "nan"], "--timeout: nan: must be a positive number"),
        (["task", "m.py::f", "--timeout", "-5"], "--timeout: -5: must be a positive number"),
        (["optimize", "m.py::f", "--wall-time", "inf"], "--wall-time: inf: must be a positive"),
        (["optimize", "m.py::f", "--seed", "1" + "0" * 23], "must be an integer from 0 to 2**63-1"),
        (["optimize", "m.py::f", "--seed", "-1"], "--seed: -1: must be an integer from 0"),
        (["optimize", "m.py::f", "--repair-tries", "-1"], "--repair-tries: -1: must be a whole"),
        (["optimize", "m.py::f", "--budget-usd", "inf"], "--budget-usd: inf: must be a finite"),
        (["optimize", "m.py::f", "--iterations", "1" + "0" * 23], "must be at most 2**63-1"),
        (["optimize", "m.py::f", "--workers", "1000000"], "--workers: 1000000: must be at most"),
        (
            ["optimize", "m.py::f", "--slots-per-gpu", "64"],
            "--slots-per-gpu: 64: must be at most 8",
        ),
        (["optimize", "m.py::f", "--max-in-flight", "99999"], "must be at most 1024"),
    ],
)
def test_numbers_out_of_range_are_refused_at_parse_time(capsys, args, said):
    with pytest.raises(SystemExit) as exc:
        main(args)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and said in err, err


def test_a_folder_or_fifo_named_as_a_file_is_said_to_be_one(capsys, tmp_path):
    """A folder was 'no such file' (or 'no such script'); a FIFO passed to detect, task or
    optimize blocked forever on its read."""
    import os

    from support import run_kernelevo

    (tmp_path / "adir.py").mkdir()
    os.mkfifo(tmp_path / "fifo.py")
    folder = f"kernelevo: error: {tmp_path / 'adir.py'} is a folder, not a file\n"
    spec = f"{CORPUS / 'model.py'}::fused_bias_gelu"
    store = ["--store", str(tmp_path / "s.sqlite")]
    for args in (
        ["task", f"{tmp_path / 'adir.py'}::f"],
        ["task", spec, "--script", str(tmp_path / "adir.py"), "--no-check"],
        ["optimize", f"{tmp_path / 'adir.py'}::f", *store],
        ["optimize", spec, "--script", str(tmp_path / "adir.py"), *store],
    ):
        assert main(args) == 2
        assert capsys.readouterr().err == folder, args
    fifo = (
        "kernelevo: error: fifo.py is not a regular file (a FIFO, socket or device); give a file\n"
    )
    for args in (
        ["detect", "fifo.py"],
        ["task", "fifo.py::f"],
        ["optimize", "fifo.py", *store],
        ["optimize", "fifo.py", "--all", *store],
    ):
        r = run_kernelevo(args, tmp_path, timeout=120)
        assert r.returncode == 2 and r.stderr == fifo, (args, r.stderr)


def test_a_cu_target_skips_entries_beside_it_that_are_not_readable_files(tmp_path):
    """A folder named sub.py or a dangling link broken.py beside the .cu crashed the search for
    its launcher (IsADirectoryError, FileNotFoundError); a FIFO there blocked it forever."""
    import os
    import shutil

    from support import run_kernelevo

    ext = tmp_path / "ext"
    shutil.copytree(CORPUS / "ext", ext)
    launcher = ext / "launcher.py"
    launcher.write_text(
        launcher.read_text().replace(
            "def row_scale(",
            "# kernelevo: inputs = (torch.randn(4, 32), torch.randn(4))\ndef row_scale(",
        )
    )
    (ext / "sub.py").mkdir()
    (ext / "broken.py").symlink_to(ext / "nowhere.py")
    os.mkfifo(ext / "afifo.py")
    r = run_kernelevo(
        ["task", "ext/scale_kernel.cu::row_scale_kernel", "--no-check", "--out", "out"],
        tmp_path,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "reference row_scale (cuda_file:scale_kernel.cu)" in r.stdout


def test_ctrl_c_during_optimize_says_interrupted_and_leaves_nothing_half_written(tmp_path):
    """Ctrl-C before the search's run started exited 130 without a word; `verify` says
    `kernelevo: interrupted`, and so does optimize now. No temporary file is left behind, and
    no run is left marked running."""
    import os
    import signal
    import subprocess
    import sys

    from support import EXAMPLES, ROOT

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp_path / "ws").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(tmp_path / "xdg"), TMPDIR=str(tmp))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernelevo",
            "optimize",
            str(EXAMPLES / "softmax.py"),
            "--iterations",
            "1",
        ],
        cwd=tmp_path / "ws",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's job
    )
    seen = []
    for line in proc.stderr:  # the offline candidates are being made: no run has started yet
        seen.append(line)
        if "kernelevo: offline:" in line:
            break
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends: the whole foreground group
    _, err = proc.communicate(timeout=120)
    err = "".join(seen) + err
    assert proc.returncode == 130, err
    assert "kernelevo: interrupted" in err.splitlines() and "Traceback" not in err
    left = [p for p in (tmp_path / "ws").rglob("*") if p.name.endswith(".tmp")]
    left += [p for p in tmp.iterdir() if not p.name.startswith("torchinductor_")]
    assert not left, left
    from kernelevo.store import Store

    path = tmp_path / "ws" / ".kernelevo" / "store.sqlite"
    assert not path.exists() or all(r.status != "running" for r in Store(path).list_runs(50))


def test_the_next_command_detect_prints_runs_as_printed(tmp_path):
    """A folder named `a::b` and a file name with a space: the printed `kernelevo task ...` was
    unquoted and split at the first `::`, so pasting it failed."""
    import shlex
    import shutil

    from support import ROOT, run_kernelevo

    folder = tmp_path / "a::b"
    folder.mkdir()
    shutil.copy(ROOT / "examples" / "softmax.py", folder / "soft max.py")
    out = run_kernelevo(["detect", "a::b/soft max.py"], tmp_path).stdout
    line = next(x for x in out.splitlines() if x.startswith("next: "))
    command = shlex.split(line.split("`")[1])
    assert command[:2] == ["kernelevo", "task"]
    built = run_kernelevo([*command[1:], "--no-check"], tmp_path)
    assert built.returncode == 0, built.stderr


def test_building_a_task_again_keeps_a_copy_the_user_edited(tmp_path):
    """`kernelevo task` rebuilt over a task file the user had edited, silently."""
    import shutil

    from support import ROOT, run_kernelevo

    shutil.copy(ROOT / "examples" / "softmax.py", tmp_path)
    first = run_kernelevo(["task", "softmax.py::Model", "--no-check"], tmp_path)
    assert first.returncode == 0, first.stderr
    (task,) = (tmp_path / ".kernelevo" / "tasks").glob("*.py")
    again = run_kernelevo(["task", "softmax.py::Model", "--no-check"], tmp_path)
    assert again.returncode == 0 and "kept as" not in again.stderr, again.stderr
    assert list(task.parent.iterdir()) == [task]  # as KernelEvo wrote it: replaced, nothing kept
    edited = task.read_text() + "# my own note\n"
    task.write_text(edited)
    third = run_kernelevo(["task", "softmax.py::Model", "--no-check"], tmp_path)
    assert third.returncode == 0, third.stderr
    (kept,) = task.parent.glob("*.edited-*")
    assert kept.read_text() == edited and "kept as" in third.stderr
    assert "# my own note" not in task.read_text() and not kept.name.endswith(".py")


def test_a_task_for_a_file_with_a_very_long_name_gets_a_short_enough_name(tmp_path):
    """A 240-character file name: the task's name passed the file system's limit ('File name
    too long', with no advice)."""
    import shutil

    from support import ROOT, run_kernelevo

    long = "m" * 240 + ".py"
    shutil.copy(ROOT / "examples" / "softmax.py", tmp_path / long)
    built = run_kernelevo(["task", f"{long}::Model", "--no-check"], tmp_path)
    assert built.returncode == 0, built.stderr
    (task,) = (tmp_path / ".kernelevo" / "tasks").glob("*.py")
    assert len(task.name.encode()) <= 200 and task.name.startswith("m" * 60 + "__Model_")


def test_detect_reports_a_syntax_error_in_a_file_with_no_targets(capsys, tmp_path):
    """`def f(:` alone said "no targets found", exit 0."""
    broken = tmp_path / "syntax.py"
    broken.write_text("def f(:\n")
    assert main(["detect", str(broken)]) == 1
    captured = capsys.readouterr()
    assert f"{broken}:1: " in captured.err and "invalid syntax" in captured.err
    fine = tmp_path / "plain.py"
    fine.write_text("x = 1\n")
    assert main(["detect", str(fine)]) == 0
    assert "no targets found" in capsys.readouterr().out
