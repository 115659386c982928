"""From a function in ordinary code to a search, and the verified kernel back into the code.

`kernelevo optimize FILE::NAME` (a scripted model on a local server) then `kernelevo apply RUN`;
the generated regression test runs under the Triton interpreter.
"""

import json
import os
import shutil
import subprocess
import sys

from fakes.anthropic_server import serve_anthropic
from fakes.scripted_server import kernel_reply
from support import ROOT, run_kernelevo

CORPUS = ROOT / "tests" / "corpus"


def kv(args, cwd, env=None):
    return run_kernelevo(args, cwd, env)


def test_optimize_target_then_apply_round_trip(tmp_path):
    shutil.copy(CORPUS / "usercode" / "model.py", tmp_path / "model.py")
    original = (tmp_path / "model.py").read_text()
    code = (CORPUS / "candidates" / "bias_gelu_triton.py").read_text()
    with serve_anthropic([], default=kernel_reply(code)) as server:
        r = kv(
            [
                "optimize",
                "model.py::fused_bias_gelu",
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
            tmp_path,
            {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "k"},
        )
    assert r.returncode == 0, r.stderr[-3000:]
    run_id = json.loads((tmp_path / "out.json").read_text())["run_id"]

    refused = kv(["apply", run_id], tmp_path)  # verified on the CPU, never measured faster
    assert refused.returncode == 2 and "--force" in refused.stderr
    assert (tmp_path / "model.py").read_text() == original

    dry = kv(["apply", run_id, "--force", "--dry-run"], tmp_path)
    assert dry.returncode == 0 and "+++ b/model.py" in dry.stdout
    assert (tmp_path / "model.py").read_text() == original  # a dry run writes nothing

    done = kv(["apply", run_id, "--force"], tmp_path)
    assert done.returncode == 0, done.stderr
    new = (tmp_path / "model.py").read_text()
    assert "_kernelevo_fused_bias_gelu.supports(x, bias)" in new
    assert new.replace("\n", "").count("def fused_bias_gelu") == 1
    kernel = tmp_path / "model_kernelevo_fused_bias_gelu.py"
    test = tmp_path / "test_model_kernelevo_fused_bias_gelu.py"
    assert kernel.exists() and test.exists() and run_id in kernel.read_text()

    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    t = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert t.returncode == 0, t.stdout[-3000:] + t.stderr[-2000:]

    again = kv(
        ["apply", run_id, "--force"], tmp_path
    )  # applied already: refused, saying so, nothing lost
    assert again.returncode == 2 and f"already calls the kernel of run {run_id}" in again.stderr
    assert (tmp_path / "model.py").read_text() == new


def test_apply_to_a_source_file_that_is_no_longer_utf8_is_one_line(tmp_path):
    """`apply failed: UnicodeDecodeError` before: the user's file, saved in another encoding
    since the search, is named with what to do, and nothing is written."""
    from kernelevo.phase import Phase
    from kernelevo.store import Store

    (tmp_path / ".kernelevo").mkdir()
    model = tmp_path / "model.py"
    model.write_bytes(b"# caf\xe9\n" + (CORPUS / "usercode" / "model.py").read_bytes())
    store = Store(tmp_path / ".kernelevo" / "store.sqlite")
    run_id = store.create_run(
        task_path=str(tmp_path / "task.py"),
        task_hash="h",
        config={"provider": "offline"},
        source_file=str(model),
        target_id="function:fused_bias_gelu",
        source_hash="x",
    )
    best = store.add_candidate(
        run_id,
        phase=Phase("iteration", 0),
        origin="llm",
        backend="triton",
        source=(CORPUS / "candidates" / "bias_gelu_triton.py").read_text(),
        candidate_hash="c",
        verdict={"status": "verified", "reason": "ok"},
    )
    store.update_run(
        run_id,
        status="done",
        summary={"status": "improved", "best_candidate": best, "speedup_eager": 2.0},
    )
    before = model.read_bytes()
    for extra in (["--dry-run"], []):
        r = kv(["apply", run_id, *extra], tmp_path)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert lines[0] == (
            f"kernelevo: error: {model}: not UTF-8 text (byte 0xe9 on line 1); save it as UTF-8"
        )
    assert model.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".kernelevo", "model.py"]
