"""Where candidates cannot be sandboxed, verification refuses unless the user passes --no-sandbox,
and verdicts made so say it; `kernelevo doctor` reports the isolation level."""

import json
import os
from pathlib import Path

from support import CANDIDATES, EXAMPLES, run_kernelevo

SOFTMAX = EXAMPLES / "softmax.py"
GOOD = CANDIDATES / "softmax" / "triton_ok.py"


def _path_without_bwrap(tmp_path: Path) -> str:
    """A PATH with every system tool but bubblewrap: what a machine without the package looks like."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        if os.path.isdir(folder):
            for name in os.listdir(folder):
                if name != "bwrap" and not (bin_dir / name).exists():
                    (bin_dir / name).symlink_to(os.path.join(folder, name))
    return str(bin_dir)


def test_without_a_sandbox_verify_refuses_in_one_line_unless_told(tmp_path):
    env = {"PATH": _path_without_bwrap(tmp_path)}
    refused = run_kernelevo(["verify", SOFTMAX, GOOD, "--no-cache"], tmp_path, env)
    assert refused.returncode == 2, refused.stderr
    assert (
        refused.stderr.count("\n") == 1
        and "--no-sandbox" in refused.stderr
        and "bubblewrap" in refused.stderr
    )
    assert "Traceback" not in refused.stderr

    told = run_kernelevo(
        ["verify", SOFTMAX, GOOD, "--no-cache", "--no-sandbox", "--json"], tmp_path, env
    )
    assert told.returncode == 0, told.stderr
    verdict = json.loads(told.stdout)
    assert verdict["status"] == "verified" and verdict["isolation"] == "none"
    again = run_kernelevo(["verify", SOFTMAX, GOOD, "--no-sandbox"], tmp_path, env)
    assert (
        "UNSANDBOXED" in again.stdout and "(cached)" not in again.stdout
    )  # never served from the cache


def test_a_sandboxed_verdict_says_so(tmp_path):
    done = run_kernelevo(["verify", SOFTMAX, GOOD, "--no-cache", "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["isolation"] == "sandbox"


def test_doctor_reports_the_isolation_level(tmp_path):
    here = run_kernelevo(["doctor", "--json"], tmp_path)
    iso = json.loads(here.stdout)["isolation"]
    assert (
        iso["level"] == "sandbox"
        and iso["detail"]["network"] is False
        and iso["detail"]["pid"] <= 3
    )
    if os.geteuid() == 0:  # root starts it: candidate code runs as a uid of its own
        assert iso["detail"]["uid"] != 0 and iso["user"].endswith("unprivileged"), iso
        assert int(iso["detail"]["capabilities"], 16) == 0
    text = run_kernelevo(["doctor"], tmp_path, {"PATH": _path_without_bwrap(tmp_path)}).stdout
    assert (
        "isolation:          none: bubblewrap (bwrap) is not installed" in text
        and "--no-sandbox" in text
    )
