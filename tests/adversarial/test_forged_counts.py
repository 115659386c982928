"""A candidate that forges what its process reports about itself (ops, launches, data flow).

The counts come from the candidate's own process, so they are claims: the candidate can patch
the counters or the report. The judge decides correctness from the outputs alone and checks
timing from its side, so forged counts cannot turn wrong outputs into "verified" (first test).
What they can still buy is the library-op policy: outputs computed by PyTorch ops with forged
counts are judged as a custom kernel (second test, the residual risk in docs/ARCHITECTURE.md).

A candidate can also hide its PyTorch ops from the recorder without patching anything: by
switching the recorder's dispatch mode off around them (torch's private `_disable_current_modes`)
or by wrapping them in an operator of its own (`torch.library.custom_op`: the recorder sees the
operator, not the ATen ops its body runs). The judge alone verifies both on the CPU; the static
allowlist, which refuses torch's private internals and operator registration, stops them.
"""

import pytest
from support import CANDIDATES, EXAMPLES
from test_judge_adversarial import ZERO, judge

from kernelevo.verify import verify_candidate

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


def test_the_forgery_is_refused_before_it_runs(tmp_path, evaluator):
    """What stands in front of the residual risk for a Python candidate: the static checks refuse
    the route the forgery takes to the harness (sys.modules)."""
    cand = tmp_path / "forged_torch_only.py"
    cand.write_text(ZERO + TORCH_ONLY + FORGE)
    v = verify_candidate(EXAMPLES / "softmax.py", cand, evaluator=evaluator, use_cache=False)
    assert v.status == "rejected" and "sys" in v.reason, (v.status, v.reason)


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


def _edited(text: str, *edits: tuple[str, str]) -> str:
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


# torch.softmax copied out by a Triton kernel: with the recorder on, refused as the reference op
COPIES_TORCH_RESULT = (CANDIDATES / "hacks_gpu" / "triton_copies_torch_result.py").read_text()
SOFTMAX_LINE = "        probs = torch.softmax(x.contiguous(), dim=-1)\n"
HIDDEN_OPS = _edited(
    COPIES_TORCH_RESULT,
    (
        "import torch\n",
        "import torch\nfrom torch.utils._python_dispatch import _disable_current_modes\n",
    ),
    (
        SOFTMAX_LINE,
        "        with _disable_current_modes():  # the op recorder sees nothing of what follows\n"
        "    " + SOFTMAX_LINE,
    ),
)
WRAPPED_OPS = _edited(
    COPIES_TORCH_RESULT,
    (
        "\n\n@triton.jit",
        """

@torch.library.custom_op("cand::smx", mutates_args=())
def smx(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


@triton.jit""",
    ),
    (SOFTMAX_LINE, "        probs = smx(x.contiguous())  # the op recorder sees cand::smx only\n"),
)
HIDING = {
    "dispatch_mode_off": (HIDDEN_OPS, "torch.utils._python_dispatch is not allowed"),
    "own_operator": (WRAPPED_OPS, "torch.library is not allowed"),
}


@pytest.mark.parametrize("name", sorted(HIDING))
def test_ops_hidden_from_the_recorder_pass_the_judge_alone(name, tmp_path, evaluator):
    if evaluator.device != "cpu":
        pytest.skip("on a GPU the launched kernels are profiled too: this shows the CPU's judge")
    cand = tmp_path / f"{name}.py"
    cand.write_text(HIDING[name][0])
    v = judge(evaluator, cand)
    assert v.status == "verified", (v.status, v.reason)


@pytest.mark.parametrize("name", sorted(HIDING))
def test_ops_hidden_from_the_recorder_are_refused_before_they_run(name, tmp_path, evaluator):
    cand = tmp_path / f"{name}.py"
    cand.write_text(HIDING[name][0])
    v = verify_candidate(EXAMPLES / "softmax.py", cand, evaluator=evaluator, use_cache=False)
    assert v.status == "rejected", (v.status, v.reason)
    assert HIDING[name][1] in v.reason, v.reason
