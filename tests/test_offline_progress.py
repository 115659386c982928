"""The offline phase says what it is doing while it runs (it can take minutes on a CPU), and why
each source proposed nothing."""

from __future__ import annotations

from pathlib import Path

from kernelevo.offline import propose_offline


def test_the_offline_phase_reports_each_source_as_it_finishes(tmp_path: Path) -> None:
    task = tmp_path / "task.py"
    task.write_text(
        "import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        raise RuntimeError('no forward here')\n\n\n"
        "def get_inputs():\n    return [torch.randn(4, 4)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    told: list[str] = []
    reasons: list[str] = []
    seeds = propose_offline(
        task, device="cpu", size="default", log=reasons.append, progress=told.append
    )
    assert seeds == []
    assert told[0].startswith("offline: matching templates and extracting Inductor's kernels")
    assert "slow on a CPU" in told[0]
    finished = told[1:]
    assert len(finished) == 2 and all(" after " in m for m in finished)
    assert any(m.startswith("offline templates: nothing, after") for m in finished)
    assert any(m.startswith("offline Inductor extraction: nothing, after") for m in finished)
    assert any(
        r.startswith("offline templates: RuntimeError: tracing the reference failed")
        for r in reasons
    )
    assert any(r.startswith("offline Inductor extraction: ") for r in reasons)  # and why
