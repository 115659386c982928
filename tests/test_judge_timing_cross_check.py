"""The judge's cross-check of a candidate's claimed time: a busy host must not reject an honest,
launch-bound kernel, and no retry or calibration may let a forged claim through.

The rule's cases use the figures of two honest Triton kernels an H200 rejected with eight test
processes beside them (0.1396 ms claimed, 0.4235 ms wall; 0.136 ms, 0.4133 ms). The end-to-end
cases run the real judge and candidate processes on CPU (timed there for this test only)."""

import subprocess
import sys

import pytest
import torch
from support import CANDIDATES, EXAMPLES

from kernelevo.judge import session as session_module
from kernelevo.judge.host_probe import IDLE_LAUNCH_MS, launch_wall
from kernelevo.judge.wall_cross_check import (
    CLAIM_RATIO,
    HOST_FLOOR_MS,
    MAX_ATTEMPTS,
    MAX_SLOWDOWN,
    PILOT_CALLS,
    WALL_TARGET_S,
    Calibration,
    cross_check,
)
from kernelevo.task import read_task
from kernelevo.verify import _run_dynamic, default_size


def _measured(walls, slowdowns):
    """The walls in the order they are measured (the pilot's first), a probe `slowdowns` times the idle
    launch time, and the call counts asked."""
    walls, slowdowns, asked, calibrated = [walls[0], *walls], list(slowdowns), [], []

    def measure(n):
        asked.append(n)
        return walls.pop(0), 0.05

    def calibrate():
        calibrated.append(1)
        return Calibration(slowdowns.pop(0) * IDLE, IDLE)

    return measure, calibrate, asked, calibrated


IDLE = 0.008
REJECTED_ON_THE_H200 = [(0.1396, 0.4235), (0.136, 0.4133)]


@pytest.mark.parametrize("claimed, wall", REJECTED_ON_THE_H200)
def test_a_launch_bound_kernel_on_a_busy_host_passes(claimed, wall):
    measure, calibrate, _, _ = _measured([wall] * 3, [3.0] * 3)
    result = cross_check(claimed, measure, calibrate)
    assert result.passed, result.detail()
    d = result.detail()
    assert d["host_slowdown"] == pytest.approx(3.0) and d["host_floor_ms"] == pytest.approx(0.6)
    assert len(d["attempts"]) == 1 and d["attempts"][0]["calibration"]["slowdown"] == 3.0
    assert "3.0x slower" in result.summary()


def test_a_consistent_attempt_asks_for_no_calibration():
    measure, calibrate, asked, calibrated = _measured([0.3], [])
    result = cross_check(0.14, measure, calibrate)
    assert (
        result.passed and not calibrated and asked == [PILOT_CALLS, int(WALL_TARGET_S * 1e3 / 0.3)]
    )
    assert result.detail()["attempts"][0]["calibration"] is None


@pytest.mark.parametrize("claimed, wall", REJECTED_ON_THE_H200)
def test_the_same_profile_on_an_idle_host_is_rejected_after_every_attempt(claimed, wall):
    measure, calibrate, asked, calibrated = _measured([wall] * 3, [1.0] * 3)
    result = cross_check(claimed, measure, calibrate)
    assert not result.passed and len(result.attempts) == MAX_ATTEMPTS == len(calibrated)
    message = result.rejection()
    assert f"reported {claimed:.4g} ms per call" in message and f"{wall:.4g} ms each" in message
    assert "a patched timer" in message and "busy" not in message
    assert "trivial launches took 8 us each, 1.0x an idle host's 8 us)" in message
    assert (
        asked == [PILOT_CALLS] + [int(WALL_TARGET_S * 1e3 / wall)] * 3
    )  # sized from the walls seen


def test_a_transient_slowdown_is_measured_again():
    measure, calibrate, _, _ = _measured([0.9, 0.25], [1.0])
    result = cross_check(0.1, measure, calibrate)
    assert result.passed and len(result.attempts) == 2
    assert [a["consistent"] for a in result.detail()["attempts"]] == [False, True]
    assert result.detail()["wall_ms_per_call"] == 0.25


def test_a_forged_claim_fails_however_busy_the_host_looks():
    """A claim of 0.001 ms for calls whose wall is 1 ms: the floor is capped at 0.8 ms."""
    measure, calibrate, asked, _ = _measured([1.0, 0.95, 1.1], [50.0] * 3)
    result = cross_check(0.001, measure, calibrate)
    assert not result.passed and len(result.attempts) == MAX_ATTEMPTS
    assert result.detail()["host_floor_ms"] == pytest.approx(HOST_FLOOR_MS * MAX_SLOWDOWN)
    message = result.rejection()
    assert "0.95 ms each" in message and "the smallest of 3 attempts" in message
    assert "a patched timer" in message and "busy" not in message  # 950x: no contention does that
    assert asked == [
        PILOT_CALLS,
        *[int(WALL_TARGET_S * 1e3 / 1.0)] * 2,
        int(WALL_TARGET_S * 1e3 / 0.95),
    ]  # not 2000 from the claim


def test_only_a_retry_is_preceded_by_the_hook_that_takes_the_gpu_alone():
    """The first attempt may share the GPU with other verdicts' checks; every later one runs
    after `before_retry` (the judge takes its GPU alone there), and a consistent first attempt
    never calls it."""
    events: list[str] = []
    measure, calibrate, _, _ = _measured([1.0, 1.0, 0.02], [1.0] * 3)

    def logged(n):
        events.append("measure")
        return measure(n)

    result = cross_check(0.01, logged, calibrate, lambda: events.append("alone"))
    assert result.passed and len(result.attempts) == 3
    assert events == ["measure", "measure", "alone", "measure", "alone", "measure"]
    events.clear()
    measure, calibrate, _, _ = _measured([0.02], [1.0])
    assert cross_check(0.01, logged, calibrate, lambda: events.append("alone")).passed
    assert events == ["measure", "measure"]


def test_a_rejection_a_busy_machine_can_explain_says_so():
    measure, calibrate, _, _ = _measured([1.2] * 3, [2.0] * 3)
    result = cross_check(0.3, measure, calibrate)
    assert not result.passed and result.detail()["host_floor_ms"] == pytest.approx(0.4)
    message = result.rejection()
    assert "the machine was busy" in message and "2.0x their idle time" in message
    assert "run it again on an idle machine" in message


@pytest.mark.parametrize("slowdown", [0.5, 1.0, 2.0, 4.0, 40.0])
@pytest.mark.parametrize("wall", [0.1, 0.5, 0.79, 0.81, 3.0, 50.0])
@pytest.mark.parametrize("claimed", [0.001, 0.05, 0.3, 1.0, 20.0])
def test_an_accepted_claim_respects_the_stated_bound(claimed, wall, slowdown):
    """Accepted means claimed >= wall / CLAIM_RATIO or wall <= HOST_FLOOR_MS * MAX_SLOWDOWN."""
    measure, calibrate, _, _ = _measured([wall] * 3, [slowdown] * 3)
    result = cross_check(claimed, measure, calibrate)
    bound = claimed * CLAIM_RATIO >= wall or wall <= HOST_FLOOR_MS * MAX_SLOWDOWN
    assert not result.passed or bound
    if claimed * CLAIM_RATIO >= wall or wall <= HOST_FLOOR_MS:
        assert result.passed


def test_the_probe_measures_the_judge_host():
    first = launch_wall(torch.device("cpu"))
    again = launch_wall(torch.device("cpu"))
    assert 0 < first["ms_per_launch"] < 5 and 0 < again["ms_per_launch"] < 5
    assert again["idle_ms_per_launch"] <= min(
        first["ms_per_launch"], again["ms_per_launch"], IDLE_LAUNCH_MS["cpu"]
    )


FORGE_TIME = """
import sys
_m = sys.modules["kernelevo.runner.candidate"]
_handle = _m.CandidateProcess.handle
def _forged(self, req):
    reply = _handle(self, req)
    if req.get("op") == "time" and "timing" in reply:
        reply["timing"]["median_ms"] = reply["timing"]["median_ms"] / 1000
    return reply
_m.CandidateProcess.handle = _forged
"""


@pytest.fixture
def timed_on_cpu(monkeypatch):
    monkeypatch.setattr(session_module, "TIMED_DEVICES", ("cuda", "cpu"))


@pytest.fixture
def busy_host():
    """A process burning a core beside the workers for the test's length."""
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    yield
    burner.kill()
    burner.wait()


def _judged(evaluator, cand):
    task = read_task(EXAMPLES / "softmax.py")
    policy = {"compile_mode": None, "max_time_s": 0.3}
    return _run_dynamic(
        task, cand, "triton", [], evaluator, "cpu", default_size("cpu"), 120.0, None, policy=policy
    )


def _cross(v):
    return next(c for c in v.checks if c.name == "timing_cross_check")


def test_an_honest_candidate_on_a_busy_host_is_verified_and_a_forged_one_is_not(
    tmp_path, evaluator, timed_on_cpu, busy_host
):
    if evaluator.device != "cpu":
        pytest.skip("the end-to-end case times on CPU")
    honest = CANDIDATES / "softmax" / "triton_ok.py"
    v = _judged(evaluator, honest)
    assert v.status == "verified", (v.reason, v.log[-1500:])
    check = _cross(v)
    assert check.passed and check.detail["attempts"], check.detail
    assert check.detail["attempts"][0]["calls"] >= 10
    forged = tmp_path / "forged_time.py"
    forged.write_text(honest.read_text() + FORGE_TIME)
    v = _judged(evaluator, forged)
    assert v.status == "rejected" and v.reason.startswith("timing inconsistent"), v.reason
    check = _cross(v)
    assert not check.passed and len(check.detail["attempts"]) == MAX_ATTEMPTS, check.detail
    assert check.detail["wall_ms_per_call"] > HOST_FLOOR_MS * MAX_SLOWDOWN
    assert all(a["calibration"]["ms_per_launch"] > 0 for a in check.detail["attempts"])


def test_a_screened_configuration_is_timed_without_the_cross_check(
    tmp_path, evaluator, timed_on_cpu
):
    """Screening only ranks a parameter-search configuration for a full verdict, which runs the
    cross-check: a forged claim is `screened` with its claim, never verified (the full verdict of
    the same file is rejected, above)."""
    if evaluator.device != "cpu":
        pytest.skip("the end-to-end case times on CPU")
    forged = tmp_path / "forged_time.py"
    forged.write_text((CANDIDATES / "softmax" / "triton_ok.py").read_text() + FORGE_TIME)
    task = read_task(EXAMPLES / "softmax.py")
    policy = {"compile_mode": None, "max_time_s": 0.3, "screen": True}
    v = _run_dynamic(
        task,
        forged,
        "triton",
        [],
        evaluator,
        "cpu",
        default_size("cpu"),
        120.0,
        None,
        policy=policy,
    )
    assert v.status == "screened" and not v.ok, (v.status, v.reason)
    assert not [c for c in v.checks if c.name == "timing_cross_check"]
    assert v.timings["cross_check"] == {"skipped": "screened"}


def test_a_forged_claim_is_rejected_when_the_cross_check_joins_the_timing_alone(
    tmp_path, timed_on_cpu, monkeypatch
):
    """The GPU's shared first attempts lately needing a retry moves the cross-check into the
    timing's exclusive stretch (kernelevo/gpu_gate.py): the same rule, so a forged claim fails."""
    from kernelevo.evaluate import Evaluator
    from kernelevo.gpu_gate import GpuGate, SharedFirstAttempts

    asked: list[bool] = []
    monkeypatch.setattr(SharedFirstAttempts, "alone_first", lambda self: asked.append(True) or True)
    forged = tmp_path / "forged_time.py"
    forged.write_text((CANDIDATES / "softmax" / "triton_ok.py").read_text() + FORGE_TIME)
    ev = Evaluator("cpu", gate=GpuGate(2))
    try:
        v = _judged(ev, forged)
    finally:
        ev.close()
    assert asked and v.status == "rejected", (v.status, v.reason)
    assert v.reason.startswith("timing inconsistent"), v.reason
    assert len(_cross(v).detail["attempts"]) == MAX_ATTEMPTS
