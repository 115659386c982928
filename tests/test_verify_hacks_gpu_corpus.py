"""The GPU reward-hack corpus (tests/candidates/hacks_gpu) is well-formed, and what the CPU can show of it holds.

The real check runs on a GPU (tests/gpu/test_verify_gpu.py). Here: every file has its
headers; the ones meant to get past the source checks do; CUDA fast-path ones compile
for sm_90 (verdict `unverified`: compiled, not run); Triton ones run in the interpreter
and fail where the GPU fails too. A cache keyed by tensor identity passes every
correctness check, so on the CPU (no timing, no roofline) it verifies: only the GPU's
roofline check rejects it.
"""

import re
import shutil
from pathlib import Path

import pytest
from support import CANDIDATES, EXAMPLES

from kernelevo.verify import verify_candidate
from kernelevo.verify.static import check_source

HACKS = sorted((CANDIDATES / "hacks_gpu").glob("*.py"))
# What differs on the CPU: the roofline check needs a GPU; a CUDA stream cannot be made without
# one (the kernel compiled in __init__, so reaching forward shows it compiles for sm_90).
# the judge writes new values into the shared buffers from outside the candidate process, so the
# tensor's version counter does not move and the identity cache hands back stale output
ON_CPU = {"caches_by_identity": "incorrect", "side_stream_unlisted": "runtime_error"}
NOT_ON_CPU = {
    "hangs_in_kernel": "spins until the time limit",
    "inline_calls_at_softmax": "a 40-70 s CUDA build",
}


def _header(path: Path) -> dict[str, str]:
    return dict(
        re.findall(
            r"^#\s*(expect|task|reason|device|check|slow):\s*(.*?)\s*$",
            "\n".join(path.read_text().splitlines()[:15]),
            re.M,
        )
    )


def test_headers():
    assert len(HACKS) >= 8
    for p in HACKS:
        head = _header(p)
        assert head.get("device") == "cuda", p.name
        assert head.get("expect") in (
            "verified",
            "incorrect",
            "rejected",
            "runtime_error",
            "timeout",
        ), p.name
        assert (EXAMPLES / f"{head.get('task')}.py").exists(), p.name
        assert head["expect"] == "verified" or head.get("reason"), (
            f"{p.name}: a failing hack names its reason"
        )


@pytest.mark.parametrize("path", HACKS, ids=[p.stem for p in HACKS])
def test_static_checks_stop_only_what_they_should(path):
    head = _header(path)
    report = check_source(path.read_text(), path.name)
    static_reject = head["expect"] == "rejected" and not report.ok
    if not report.ok:
        assert static_reject and head["reason"].lower() in report.problems[0].lower(), (
            report.problems
        )
    assert report.backend in ("triton", "cuda", "cuda_inline"), report.backend


@pytest.mark.parametrize(
    "path", [p for p in HACKS if p.stem not in NOT_ON_CPU], ids=lambda p: p.stem
)
def test_what_the_cpu_can_show(path, evaluator):
    if evaluator.device != "cpu":
        pytest.skip("the GPU run is tests/gpu/test_verify_gpu.py")
    head = _header(path)
    backend = check_source(path.read_text()).backend
    if backend == "cuda" and not (
        shutil.which("nvcc") or Path("/usr/local/cuda/bin/nvcc").exists()
    ):
        pytest.skip("no nvcc to compile the CUDA fast path")
    v = verify_candidate(
        EXAMPLES / f"{head['task']}.py", path, evaluator=evaluator, device="cpu", timeout=120
    )
    if not check_source(path.read_text()).ok:
        expected = head["expect"]
    elif path.stem in ON_CPU:
        expected = ON_CPU[path.stem]
    elif backend == "cuda":
        expected = "unverified"  # compiled for sm_90 with nvcc, not run
    else:
        expected = head["expect"]
    assert v.status == expected, (v.status, v.reason)
    if expected == "unverified":
        assert "compiled, not run" in v.reason, v.reason
        assert v.reason.count("compiled, not run") == 1, v.reason
    elif expected == head["expect"] and head.get("reason"):
        assert head["reason"].lower() in v.reason.lower(), v.reason
