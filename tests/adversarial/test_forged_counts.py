"""A candidate that forges what its process reports about itself (ops, launches, data flow).

The counts come from the candidate's own process, so they are claims: the candidate can patch
the counters or the report. The judge decides correctness from the outputs alone and checks
timing from its side, so forged counts cannot turn wrong outputs into "verified" (first test).
What they can still buy is the library-op policy: outputs computed by PyTorch ops with forged
counts are judged as a custom kernel (second test, the residual risk in docs/ARCHITECTURE.md).
"""

import pytest
from test_judge_adversarial import ZERO, judge

FORGE = """
import sys
_m = sys.modules["kernelevo.runner.candidate"]
_handle = _m.CandidateProcess.handle
def _forged(self, req):
    reply = _handle(self, req)
    if req.get("op") == "run":
        reply.update(launches=7, custom_calls=7, untraced=[])
    if req.get("op") == "report":
        reply.update(ops={}, launches=7, kernels={"softmax_kernel": 7})
    return reply
_m.CandidateProcess.handle = _forged
"""

TORCH_ONLY = """
def _attack(self, x):
    return torch.softmax(x, dim=-1)
ModelNew.attack = _attack
"""


def test_forged_counts_do_not_verify_wrong_outputs(tmp_path, evaluator):
    cand = tmp_path / "forged_zeros.py"
    cand.write_text(ZERO + FORGE)
    v = judge(evaluator, cand)
    assert v.status == "incorrect", (v.status, v.reason)


def test_without_forging_pytorch_ops_are_rejected(tmp_path, evaluator):
    cand = tmp_path / "torch_only.py"
    cand.write_text(ZERO + TORCH_ONLY)
    v = judge(evaluator, cand)
    assert v.status == "rejected", (v.status, v.reason)


@pytest.mark.xfail(
    strict=True,
    reason="residual risk: the library-op policy rests on counts the "
    "candidate's own process reports (docs/ARCHITECTURE.md, trust boundaries)",
)
def test_forged_counts_do_not_pass_the_library_op_policy(tmp_path, evaluator):
    cand = tmp_path / "forged_torch_only.py"
    cand.write_text(ZERO + TORCH_ONLY + FORGE)
    v = judge(evaluator, cand)
    assert v.status == "rejected", (v.status, v.reason)
