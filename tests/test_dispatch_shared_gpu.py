"""Two evaluation slots on one device (a CPU worker stands in for a GPU): two candidates' check
phases overlap, and each timing has the device alone, as the verdicts' own gate records show."""

import functools
import itertools
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from support import CANDIDATES, EXAMPLES

import kernelevo.judge.session as session_module
import kernelevo.verify as verify_module
from kernelevo.dispatch.local import LocalDispatcher
from kernelevo.judge import wall_cross_check
from kernelevo.store import Store

SOFTMAX = EXAMPLES / "softmax.py"
GOOD = (CANDIDATES / "softmax" / "triton_ok.py").read_text()


@pytest.fixture
def timed_briefly_on_cpu(monkeypatch):
    """Verdicts on the CPU time their candidate too (the test's stand-in for a GPU), briefly and
    without torch.compile's baseline. The wall cross-check is loosened: on a loaded 2-core machine
    a CPU call's mean wall can exceed 3x its median (seen: 91.6 vs 25 ms), and the subject here is
    the gate (the cross-check has its own tests)."""
    monkeypatch.setattr(session_module, "TIMED_DEVICES", ("cuda", "cpu"))
    monkeypatch.setattr(wall_cross_check, "CLAIM_RATIO", 1000.0)
    quick = functools.partial(verify_module.verify_candidate, compile_mode=None, max_time_s=0.2)
    monkeypatch.setattr(verify_module, "verify_candidate", quick)


def overlap(a, b) -> bool:
    return a["from"] < b["to"] and b["from"] < a["to"]


def held_before_the_second_set(monkeypatch, wait) -> None:
    """Every check phase calls `wait(session)` before its second input set: the tests make an
    interleaving certain there that a loaded machine would otherwise decide. (`one_set` is
    patched since no module imports it by name.)"""
    from kernelevo.judge import input_sets

    one_set = input_sets.one_set

    def held(session, name, *args, **kwargs):
        if name == "s1":
            wait(session)
        return one_set(session, name, *args, **kwargs)

    monkeypatch.setattr(input_sets, "one_set", held)


def test_two_slots_on_one_device_overlap_checks_and_time_alone(
    tmp_path, timed_briefly_on_cpu, monkeypatch
):
    """Each verdict is held after its first input set until the other has entered the gate (a
    loaded machine could otherwise finish one check phase before the other starts): with a
    shared gate, one enters while the other checks."""
    import threading

    paths = []
    for i in range(2):
        p = tmp_path / f"cand{i}.py"
        p.write_text(f"{GOOD}\n# nonce shared-{i}-{time.time()}\n")
        paths.append(p)
    entered = {p: threading.Event() for p in paths}
    enter_gate = session_module.Session.enter_gate

    def spy_enter(self):
        hold = enter_gate(self)
        entered[self.cand_path].set()
        return hold

    def until_the_other_entered(session):
        entered[paths[1] if session.cand_path == paths[0] else paths[0]].wait(60)

    monkeypatch.setattr(session_module.Session, "enter_gate", spy_enter)
    held_before_the_second_set(monkeypatch, until_the_other_entered)
    with LocalDispatcher(
        "cpu", workers=1, slots_per_gpu=2, store=Store(tmp_path / "s.sqlite")
    ) as d:
        assert d.capacity == 2
        with ThreadPoolExecutor(2) as ex:
            verdicts = list(ex.map(lambda p: d.evaluate(SOFTMAX, p, 0), paths))
    assert [v.status for v in verdicts] == ["verified"] * 2, [v.reason for v in verdicts]
    assert {v.device["worker"] for v in verdicts} == {"cpu0.0", "cpu0.1"}
    assert all(v.timings.get("candidate_ms") for v in verdicts)  # both were timed
    held = [v.phases["gpu_gate"]["held"] for v in verdicts]
    for mine, other in ((held[0], held[1]), (held[1], held[0])):
        timing = [i for i in mine if i["for"] == "timing"]
        assert len(timing) == 1 and timing[0]["as"] == "exclusive"
        assert not any(overlap(timing[0], i) for i in other), (mine, other)
    checks = [[i for i in h if i["for"] == "checks"] for h in held]
    assert any(overlap(a, b) for a in checks[0] for b in checks[1]), held


def test_a_verdict_waits_for_its_candidate_process_before_it_takes_the_gate(
    tmp_path, timed_briefly_on_cpu, monkeypatch
):
    """The spare candidate process may still be starting CUDA (0.15-0.27 s of a back-to-back
    verdict on an H100): the verdict waits for it before it enters its GPU's gate, where the wait
    would hold back another slot's timing."""
    import threading

    from kernelevo.judge.clients import CandidateClient

    seen: list[tuple[int, str]] = []
    opened, entered = CandidateClient.open, session_module.Session.enter_gate

    def spy_open(self):
        seen.append((threading.get_ident(), "open"))
        return opened(self)

    def spy_enter(self):
        seen.append((threading.get_ident(), "gate"))
        return entered(self)

    monkeypatch.setattr(CandidateClient, "open", spy_open)
    monkeypatch.setattr(session_module.Session, "enter_gate", spy_enter)
    path = tmp_path / "cand.py"
    path.write_text(f"{GOOD}\n# nonce gate-{time.time()}\n")
    with LocalDispatcher(
        "cpu", workers=1, slots_per_gpu=2, store=Store(tmp_path / "s.sqlite")
    ) as d:
        verdict = d.evaluate(SOFTMAX, path, 0)
    assert verdict.status == "verified", verdict.reason
    assert verdict.phases["spare_wait_s"] is not None
    mine = [what for _, what in seen]
    assert "gate" in mine and mine.index("open") < mine.index("gate"), seen


def test_a_timing_takes_the_gpu_between_another_verdicts_input_sets(
    tmp_path, timed_briefly_on_cpu, monkeypatch
):
    """A check phase steps aside between two input sets for the other slot's timing, with its
    candidate stopped, instead of making that timing wait for all of it. The order is made
    certain (a loaded machine decides it otherwise): the first verdict is held after its first
    input set until the second verdict's timing waits for the GPU."""
    import threading

    from kernelevo.judge import input_sets

    paths = [tmp_path / "first.py", tmp_path / "second.py"]
    paths[0].write_text(f"{GOOD}\n# nonce first-{time.time()}\n")
    paths[1].write_text(f"{GOOD}\n# nonce second-{time.time()}\n")
    between_sets = threading.Event()

    def the_first_until_a_timing_waits(session):
        if session.cand_path == paths[0]:
            between_sets.set()
            deadline = time.monotonic() + 120
            while not session.hold.gate._timers_waiting and time.monotonic() < deadline:
                time.sleep(0.01)
            input_sets.step_aside(session)

    held_before_the_second_set(monkeypatch, the_first_until_a_timing_waits)
    with LocalDispatcher(
        "cpu", workers=1, slots_per_gpu=2, store=Store(tmp_path / "s.sqlite")
    ) as d:
        d.evaluate(SOFTMAX, paths[1], 0)  # the task's probe and baselines are kept: both start warm
        paths[1].write_text(f"{GOOD}\n# nonce second-again-{time.time()}\n")
        with ThreadPoolExecutor(2) as ex:
            first_run = ex.submit(d.evaluate, SOFTMAX, paths[0], 0)
            assert between_sets.wait(120), "the first verdict never finished its first input set"
            second, first = ex.submit(d.evaluate, SOFTMAX, paths[1], 0).result(), first_run.result()
    assert [first.status, second.status] == ["verified"] * 2, [first.reason, second.reason]
    assert first.phases["gpu_gate"]["paused_s"] > 0, first.phases["gpu_gate"]
    held = first.phases["gpu_gate"]["held"]
    checks = [i for i in held if i["for"] == "checks"]
    timing = next(i for i in second.phases["gpu_gate"]["held"] if i["for"] == "timing")
    assert len(checks) >= 2
    assert checks[0]["from"] < timing["from"] < timing["to"] < checks[-1]["to"], (checks, timing)
    assert not any(overlap(timing, i) for i in held)


def judged_with_steps_seen(tmp_path, monkeypatch, name: str, asides: bool = False):
    """One verdict on two slots, with every request to the judge and the candidate and every
    change of the gate (ALONE, SHARED) in the order they happened; with `asides`, every point
    where it would step aside for a waiting timing (ASIDE) too."""
    from kernelevo.gpu_gate import GateHold
    from kernelevo.judge.clients import CandidateClient, JudgeClient

    seen: list[str] = []
    ask, cand_ask = JudgeClient.ask, CandidateClient.ask
    alone, done = GateHold.time_alone, GateHold.timing_done

    def spy_ask(self, request, timeout=None):
        seen.append(type(request).__name__)
        return ask(self, request, timeout)

    def spy_cand(self, request, when, timeout=None):
        seen.append(type(request).__name__)
        return cand_ask(self, request, when, timeout)

    monkeypatch.setattr(JudgeClient, "ask", spy_ask)
    monkeypatch.setattr(CandidateClient, "ask", spy_cand)
    monkeypatch.setattr(GateHold, "time_alone", lambda h: (seen.append("ALONE"), alone(h))[1])
    monkeypatch.setattr(GateHold, "timing_done", lambda h: (seen.append("SHARED"), done(h))[1])
    if asides:
        pause = GateHold.pause_for_timing
        monkeypatch.setattr(
            GateHold, "pause_for_timing", lambda h, *a: (seen.append("ASIDE"), pause(h, *a))[1]
        )
    path = tmp_path / "cand.py"
    path.write_text(f"{GOOD}\n# nonce {name}-{time.time()}\n")
    with LocalDispatcher(
        "cpu", workers=1, slots_per_gpu=2, store=Store(tmp_path / "s.sqlite")
    ) as d:
        verdict = d.evaluate(SOFTMAX, path, 0)
    assert verdict.status == "verified", verdict.reason
    return verdict, seen


def test_only_the_timing_itself_holds_the_gpu_alone(tmp_path, timed_briefly_on_cpu, monkeypatch):
    """The timing sets are drawn before, the wall-clock cross-check's calls run, their outputs
    are checked and the bound computed after the stretch in which the verdict has its GPU alone
    (the candidate's timing and the baselines): other slots' check phases run meanwhile."""
    _, seen = judged_with_steps_seen(tmp_path, monkeypatch, "alone")
    assert seen.count("ALONE") == 1, seen  # the cross-check's first attempt was consistent
    a, b = seen.index("ALONE"), seen.index("SHARED")
    alone_asks = set(seen[a + 1 : b])
    assert {"Time", "Baselines"} <= alone_asks, seen[a:b]
    assert seen.index("TimingSets") < a
    assert {"Repeat", "CheckTimedOutput", "Bound"} <= set(seen[b:]), seen[b:]
    assert not alone_asks & {"Repeat", "CheckTimedOutput", "Bound", "TimingSets"}, seen[a:b]
    # the judge exports one set of output buffers at a time: each call's outputs are checked
    # before the next back-to-back calls
    repeats = [i for i, x in enumerate(seen) if x == "Repeat"]
    assert len(repeats) >= 2, seen
    for r, nxt in zip(repeats, [*repeats[1:], len(seen)], strict=True):
        assert seen[r + 1 : nxt].count("CheckTimedOutput") == 1, seen[r:nxt]


def test_a_waiting_timing_goes_between_any_two_gpu_steps_of_an_input_set(
    tmp_path, timed_briefly_on_cpu, monkeypatch
):
    """Each request of a check phase that puts work on the GPU (the candidate's run, the
    reference's, the comparison, the refill) ends with that work done, and a point where a
    waiting timing of another slot takes the GPU follows it: a timing waits for one step of
    each verdict then checking, not for a whole input set."""
    _, seen = judged_with_steps_seen(tmp_path, monkeypatch, "steps", asides=True)
    gpu = {"Run", "Reference", "Compare", "Refill"}
    checks = [x for x in seen[: seen.index("TimingSets")] if x in gpu | {"ASIDE"}]
    assert checks.count("Run") >= 6, checks  # five input sets, the first also refilled
    for step, after in itertools.pairwise(checks):
        assert not (step in gpu and after in gpu), (step, after, checks)


@pytest.mark.parametrize(
    ("device", "extra", "slots"),
    [
        ("cuda", [], None),
        ("cpu", [], 1),
        ("cuda", ["--cluster", "auto"], 1),
        ("cuda", ["--slots-per-gpu", "3"], 3),
    ],
)
def test_a_gpu_search_gets_the_machines_slots_unless_told(
    monkeypatch, tmp_path, device, extra, slots
):
    """On a GPU the dispatcher picks the slots from the GPUs' memory and the cores
    (tests/test_measure_gpus.py); the CPU, whose two cores the interpreter fills, and a cluster
    keep one."""
    import argparse

    import kernelevo.dispatch as dispatch
    from kernelevo.cli import optimize

    asked: dict = {}
    monkeypatch.setattr(dispatch, "open_dispatcher", lambda device, **kw: asked.update(kw))
    parser = argparse.ArgumentParser()
    optimize.register(parser.add_subparsers())
    args = parser.parse_args(["optimize", "m.py::f", *extra])
    optimize._open_dispatcher(args, device, None)
    assert asked["slots_per_gpu"] == slots


def test_a_cross_check_retry_takes_the_gpu_alone(tmp_path, timed_briefly_on_cpu, monkeypatch):
    """A first cross-check attempt judged inconsistent (here by a rule made to say so twice,
    as contention from another slot's checks could) is measured again with the GPU alone."""
    said = {"inconsistent": 0}

    def twice_inconsistent(claimed_ms, wall_ms, floor_ms=wall_cross_check.HOST_FLOOR_MS):
        said["inconsistent"] += 1
        return said["inconsistent"] > 2  # the first attempt, and again after its calibration

    monkeypatch.setattr(wall_cross_check, "consistent", twice_inconsistent)
    verdict, seen = judged_with_steps_seen(tmp_path, monkeypatch, "retry")
    assert seen.count("ALONE") == 2 and seen.count("SHARED") == 2, seen
    first_shared, retry = seen.index("SHARED"), seen.index("ALONE", seen.index("SHARED"))
    assert seen[first_shared:retry].count("Repeat") == 2, seen  # the pilot and the first attempt
    assert "Repeat" in seen[retry : seen.index("SHARED", retry)], seen
    held = verdict.phases["gpu_gate"]["held"]
    assert [i["as"] for i in held if i["for"] == "timing"] == ["exclusive"] * 2, held
    cross = verdict.timings["cross_check"]
    assert len(cross["attempts"]) == 2, cross


def test_a_cross_check_joins_the_timing_alone_once_shared_first_attempts_mostly_needed_a_retry(
    tmp_path, timed_briefly_on_cpu, monkeypatch
):
    """Where the GPU's recent shared first attempts mostly had to be retried alone (as at 8 slots
    on an H100), the verdict's cross-check runs inside its timing's exclusive stretch: one wait
    for the GPU alone, no shared attempt and calibration spent first."""
    from kernelevo.gpu_gate import SharedFirstAttempts

    monkeypatch.setattr(SharedFirstAttempts, "alone_first", lambda self: True)
    verdict, seen = judged_with_steps_seen(tmp_path, monkeypatch, "joined")
    assert seen.count("ALONE") == 1 and seen.count("SHARED") == 1, seen
    a, b = seen.index("ALONE"), seen.index("SHARED")
    assert {"Time", "Baselines", "Repeat"} <= set(seen[a:b]), seen[a:b]
    assert "Repeat" not in seen[b:], seen[b:]
    assert "CheckTimedOutput" in seen[b:], seen[b:]  # the last call's outputs, checked shared
    assert verdict.timings["cross_check"]["first_attempt"] == "alone"


def test_a_shared_first_attempt_is_recorded_on_its_gpus_gate(
    tmp_path, timed_briefly_on_cpu, monkeypatch
):
    from kernelevo.gpu_gate import SharedFirstAttempts

    recorded: list[bool] = []
    record = SharedFirstAttempts.record
    monkeypatch.setattr(
        SharedFirstAttempts, "record", lambda self, r: (recorded.append(r), record(self, r))[1]
    )
    verdict, _ = judged_with_steps_seen(tmp_path, monkeypatch, "recorded")
    assert verdict.timings["cross_check"]["first_attempt"] == "shared"
    assert recorded == [len(verdict.timings["cross_check"]["attempts"]) > 1]
