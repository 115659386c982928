"""The store-forging attack end to end: a candidate writes a forged "verified" row for a broken file into
the store it finds through /proc/<ppid>/cwd (and the workspace's known path); `kernelevo verify`
of the broken file must still fail. Unsandboxed (--no-sandbox) the same forgery succeeds, which
is what the sandbox is for."""

import json
import os
import subprocess
import sys

from support import CANDIDATES, EXAMPLES, ROOT, run_kernelevo

from kernelevo.digest import text_hash
from kernelevo.task import read_task
from kernelevo.verify import resolve_size, verdict_key

SOFTMAX = EXAMPLES / "softmax.py"
GOOD = (CANDIDATES / "softmax" / "triton_ok.py").read_text()

FORGER = """
import json as _json, os as _os, sqlite3 as _sqlite3
for _path in ({paths}):
    _path = _path.replace("PPID", str(_os.getppid()))
    if _os.path.exists(_path):  # (the static checks refuse try/except)
        _db = _sqlite3.connect(_path, timeout=2)
        _db.execute("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, 'verified', ?, 0)",
                    ({task!r}, {cand!r}, {key!r}, _json.dumps({{"status": "verified", "reason": "forged",
                                                            "backend": "triton"}})))
        _db.commit()
"""


def _attack(workspace, *flags):
    broken = workspace / "broken.py"
    broken.write_text(
        GOOD.replace("return out.view(x.shape)", "return (out * 0.5).view(x.shape)", 1)
    )
    assert broken.read_text() != GOOD
    task = read_task(SOFTMAX)
    key = verdict_key("cpu", resolve_size(task, "cpu", None))
    store = workspace / ".kernelevo" / "store.sqlite"
    paths = ["/proc/PPID/cwd/.kernelevo/store.sqlite", str(store)]
    forger = workspace / "forger.py"
    forger.write_text(
        FORGER.format(paths=paths, task=task.hash, cand=text_hash(broken.read_text()), key=key)
        + "\n"
        + GOOD
    )
    # straight to the judge from an engine in the workspace (static checks would refuse such a file;
    # the sandbox must hold without them)
    engine = (
        "from pathlib import Path\nfrom kernelevo.store import Store\nfrom kernelevo.evaluate import Evaluator\n"
        "from kernelevo.task import read_task\nfrom kernelevo.verify import _run_dynamic, default_size\n"
        "Store()\nwith Evaluator('cpu') as ev:\n"
        f"    v = _run_dynamic(read_task(Path({str(SOFTMAX)!r})), Path({str(forger)!r}), 'triton', [], ev, 'cpu', "
        "default_size('cpu'), 300.0, None, measure=False)\nprint(v.status)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if flags:
        env["KERNELEVO_NO_SANDBOX"] = "1"
    first = subprocess.run(
        [sys.executable, "-c", engine],
        cwd=workspace,
        text=True,
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert first.returncode == 0 and first.stdout.strip() == "verified", (
        first.stdout + first.stderr[-2000:]
    )
    return run_kernelevo(
        ["verify", SOFTMAX, broken, "--device", "cpu", "--json", *flags], workspace
    )


def test_a_forged_store_row_does_not_verify_a_broken_candidate(tmp_path):
    (tmp_path / "ws").mkdir()
    second = _attack(tmp_path / "ws")
    verdict = json.loads(second.stdout)
    assert second.returncode == 1 and verdict["status"] != "verified" and not verdict["cached"], (
        verdict["reason"]
    )
    (tmp_path / "open").mkdir()
    control = json.loads(_attack(tmp_path / "open", "--no-sandbox").stdout)
    assert control["status"] == "verified" and control["cached"] and control["reason"] == "forged"
