"""Each known reward hack that can be shown on the CPU is rejected or failed, with a reason.

The corpus lives in tests/candidates/hacks/; each file states what must happen:
`# expect: <status>`, `# task: <example>`, `# reason: <substring of the reason>`.
"""

import re
from pathlib import Path

import pytest
from support import CANDIDATES, EXAMPLES

from kernelevo.verify import verify_candidate

HACKS = sorted((CANDIDATES / "hacks").glob("*.py"))


def _header(path: Path) -> dict[str, str]:
    head = {}
    for line in path.read_text().splitlines()[:15]:
        m = re.match(r"#\s*(expect|task|reason|reason_gpu|device):\s*(.+)", line)
        if m:
            head[m.group(1)] = m.group(2).strip()
    return head


def test_corpus_is_there():
    assert len(HACKS) >= 12


@pytest.mark.parametrize("path", HACKS, ids=[p.stem for p in HACKS])
def test_hack_caught(path, evaluator, monkeypatch):
    head = _header(path)
    assert {"expect", "task"} <= head.keys(), f"{path.name} lacks its '# expect:'/'# task:' header"
    if head.get("device") == "cuda" and evaluator.device != "cuda":
        pytest.skip("GPU-only hack")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-must-not-leak")
    v = verify_candidate(
        EXAMPLES / f"{head['task']}.py",
        path,
        evaluator=evaluator,
        device=evaluator.device,
        timeout=20 if head["expect"] == "timeout" else None,
    )
    assert v.status == head["expect"], (v.status, v.reason)
    reason = (
        head.get("reason_gpu")
        if evaluator.device == "cuda" and head.get("reason_gpu")
        else head.get("reason")
    )
    if reason:
        assert reason.lower() in v.reason.lower(), v.reason
    assert v.reason
