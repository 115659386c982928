"""Screening a parameter-search configuration: one input set and the refill, then timed; a pass is
`screened`, never `verified`, and a screened verdict never answers for a full one."""

from support import CANDIDATES, EXAMPLES

from kernelevo.store import Store
from kernelevo.verify import verify_candidate

TASK = EXAMPLES / "softmax.py"
GOOD = CANDIDATES / "softmax" / "triton_ok.py"


def _matches(verdict) -> int:
    return sum(1 for c in verdict.checks if c.name.startswith("match["))


def test_a_screened_pass_is_not_a_verified_one(evaluator):
    v = verify_candidate(TASK, GOOD, evaluator=evaluator, device=evaluator.device, screen=True)
    assert v.status == "screened" and not v.ok, (v.status, v.reason)
    assert v.reason.startswith(
        "screened, not verified: outputs match the reference on 1 input set;"
    )
    assert _matches(v) == 1 and "same_buffers_new_values" in {c.name for c in v.checks}
    assert not [c for c in v.checks if c.name.startswith("match[extra")], "no extra shapes"


def test_screening_still_catches_a_wrong_kernel(evaluator, tmp_path):
    wrong = tmp_path / "wrong.py"
    source = GOOD.read_text()
    assert "return out.view(x.shape)" in source
    wrong.write_text(source.replace("return out.view(x.shape)", "return out.view(x.shape) * 1.01"))
    v = verify_candidate(TASK, wrong, evaluator=evaluator, device=evaluator.device, screen=True)
    assert v.status == "incorrect", (v.status, v.reason)


def test_a_screened_verdict_never_answers_for_a_full_one(evaluator, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    cand = tmp_path / "cand.py"
    cand.write_text(GOOD.read_text() + "\n# screened first\n")

    def judge(screen: bool):
        return verify_candidate(
            TASK, cand, evaluator=evaluator, device=evaluator.device, store=store, screen=screen
        )

    first = judge(True)
    assert first.status == "screened" and not first.cached
    again = judge(True)
    assert again.cached and again.status == "screened"
    full = judge(False)
    assert not full.cached and full.status == "verified" and _matches(full) >= 5
    # once verified in full, a screening request takes the full verdict
    after = judge(True)
    assert after.cached and after.status == "verified"
