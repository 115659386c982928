"""bench/checkout_tasks.py: one row per target of a checkout, built as a user builds it."""

import subprocess
import sys

from support import ROOT

TARGETS = ["ops.py::Gelu", "ops.py::Missing"]


def test_a_row_per_target_and_the_totals(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "ops.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Gelu(nn.Module):\n"
        "    def forward(self, x):\n        return torch.nn.functional.gelu(x) * 2.0\n"
    )
    (tmp_path / ".kernelevo").mkdir()  # an earlier run's: removed first
    (tmp_path / ".kernelevo" / "stale").write_text("x")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "checkout_tasks.py"), str(tmp_path), *TARGETS],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ops.py")]
    assert rows[0].startswith(
        "| ops.py::Gelu | yes | guessed from the signature of Gelu.forward | ok |"
    )
    assert rows[1].startswith("| ops.py::Missing | no | - | - | ops.py: no target 'Missing'")
    assert "1 of 2 tasks built unedited (1 checked here, 0 not checked" in proc.stdout
    assert not (tmp_path / ".kernelevo" / "stale").exists()
