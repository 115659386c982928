"""The chain a user runs, end to end: `task --script` → `optimize FILE::NAME` (reusing that task)
→ `apply` on the result, and `optimize` of a generated task file → `apply`; what apply refuses;
how runs are listed; the torch.compile advice."""

import json
import shutil
from pathlib import Path

from fakes.anthropic_server import serve_anthropic
from fakes.scripted_server import kernel_reply
from support import ROOT, run_kernelevo

from kernelevo.store import Store
from kernelevo.targets.compile_advice import compile_advice

CORPUS = ROOT / "tests" / "corpus"
SCRIPT = (
    "import torch\nfrom model import fused_bias_gelu\n\nif __name__ == '__main__':\n"
    "    fused_bias_gelu(torch.randn(6, 64), torch.randn(64))\n"
)


def _search(args, cwd, server):
    return run_kernelevo(
        [
            "optimize",
            *args,
            "--provider",
            "anthropic",
            "--model",
            "m",
            "--iterations",
            "1",
            "--no-offline-seeds",
            "--concurrency",
            "1",
            "--device",
            "cpu",
            "--json-out",
            "out.json",
        ],
        cwd,
        {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "k"},
    )


def test_task_script_then_optimize_reuses_it_then_apply_and_a_generated_task_file_run(tmp_path):
    shutil.copy(CORPUS / "usercode" / "model.py", tmp_path / "model.py")
    (tmp_path / "drive.py").write_text(SCRIPT)
    code = (CORPUS / "candidates" / "bias_gelu_triton.py").read_text()
    built = run_kernelevo(
        ["task", "model.py::fused_bias_gelu", "--script", "drive.py", "--no-check"], tmp_path
    )
    assert built.returncode == 0, built.stderr
    task_file = built.stdout.split("task: ", 1)[1].split("\n", 1)[0].strip()
    assert "(6, 64)" in Path(task_file).read_text()
    with serve_anthropic([], default=kernel_reply(code)) as server:
        first = _search(["model.py::fused_bias_gelu"], tmp_path, server)
        assert first.returncode == 0, first.stderr[-3000:]
        assert f"reusing the task built before: {task_file}" in first.stderr
        assert "next: " in first.stdout
        on_task = _search([task_file], tmp_path, server)
        assert on_task.returncode == 0, on_task.stderr[-3000:]
    run_id = json.loads((tmp_path / "out.json").read_text())["run_id"]
    preview = run_kernelevo(["apply", run_id, "--dry-run"], tmp_path)  # no --force needed to look
    assert preview.returncode == 0 and "+++ b/model.py" in preview.stdout, preview.stderr
    assert "verified on the CPU only" in preview.stdout and "never for CUDA" in preview.stdout
    done = run_kernelevo(
        ["apply", run_id, "--force"], tmp_path
    )  # a run on the task file applies to model.py
    assert done.returncode == 0, done.stderr
    assert "_kernelevo_fused_bias_gelu" in (tmp_path / "model.py").read_text()

    listed = run_kernelevo(["runs"], tmp_path).stdout.splitlines()
    assert listed[0].split()[:4] == ["run", "started", "state", "target"]
    assert all("model.py::fused_bias_gelu" in line for line in listed[1:3])


def test_optimize_script_option_builds_from_the_script(tmp_path):
    shutil.copy(CORPUS / "usercode" / "model.py", tmp_path / "model.py")
    (tmp_path / "drive.py").write_text(SCRIPT.replace("(6, 64)", "(3, 64)"))
    bad = run_kernelevo(["optimize", str(CORPUS / "usercode"), "--script", "drive.py"], tmp_path)
    assert bad.returncode == 2 and "--script goes with FILE::NAME" in bad.stderr
    code = (CORPUS / "candidates" / "bias_gelu_triton.py").read_text()
    with serve_anthropic([], default=kernel_reply(code)) as server:
        r = _search(["model.py::fused_bias_gelu", "--script", "drive.py"], tmp_path, server)
    assert r.returncode == 0, r.stderr[-3000:]
    task = json.loads((tmp_path / "out.json").read_text())["task"]
    text = Path(task).read_text()
    assert "captured from drive.py" in text and "(3, 64)" in text


def test_apply_writes_only_inside_the_runs_workspace_and_crashed_runs_are_listed(tmp_path):
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    (ws / ".kernelevo").mkdir(parents=True)
    elsewhere.mkdir()
    shutil.copy(CORPUS / "usercode" / "model.py", elsewhere / "model.py")
    store = Store(ws / ".kernelevo" / "store.sqlite")
    run_id = store.create_run(
        task_path=str(ws / "task.py"),
        task_hash="h",
        config={"provider": "offline"},
        source_file=str(elsewhere / "model.py"),
        target_id="function:fused_bias_gelu",
        source_hash="x",
    )
    store.update_run(run_id, status="running")  # the process that ran it is gone: crashed
    r = run_kernelevo(["apply", run_id, "--force"], ws)
    assert r.returncode == 2 and "outside this workspace" in r.stderr
    assert (elsewhere / "model.py").read_text() == (CORPUS / "usercode" / "model.py").read_text()
    listed = run_kernelevo(["runs"], ws).stdout
    assert "crashed" in listed and f"kernelevo optimize --resume {run_id}" in listed


def test_torch_compile_advice_when_it_beats_eager_and_we_only_tie_it():
    tie = {"eager_ms": 8.9, "compile_ms": 1.0, "candidate_ms": 0.99}
    advice = compile_advice(tie, "no_improvement", {"compile_baseline_s": 41.7})
    assert advice.sentence().startswith(
        "torch.compile makes this 8.9x faster than your code; our best kernel ties it"
    )
    assert "about 42 s" in advice.sentence()
    assert compile_advice(tie, "improved") is None  # we beat it: the result says so instead
    assert (
        compile_advice({"eager_ms": 1.2, "compile_ms": 1.0, "candidate_ms": 1.0}, "no_improvement")
        is None
    )
    assert (
        compile_advice({"eager_ms": 9.0, "compile_ms": 1.0, "candidate_ms": 0.5}, "no_improvement")
        is None
    )
