"""Every bundled example has a correct Triton candidate, and the verifier says so."""

import pytest
from support import CANDIDATES, EXAMPLES, compiled_for_sm90

from kernelevo.verify import verify_candidate

EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES.glob("*.py"))


def test_at_least_six_examples():
    assert len(EXAMPLE_NAMES) >= 6


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_correct_triton_candidate_verified(name, evaluator):
    cand = CANDIDATES / name / "triton_ok.py"
    assert cand.exists(), f"no correct candidate for example {name}"
    v = verify_candidate(
        EXAMPLES / f"{name}.py", cand, evaluator=evaluator, device=evaluator.device
    )
    assert v.status == "verified", (v.reason, [c.message for c in v.failed_checks()], v.log[-2000:])
    assert v.kernel_launches > 0
    assert v.backend == "triton"
    names = {c.name for c in v.checks}
    assert "same_buffers_new_values" in names and "inputs_unchanged" in names
    assert sum(1 for c in v.checks if c.name.startswith("match[")) >= 5
    if evaluator.device == "cpu":
        assert compiled_for_sm90(v)
