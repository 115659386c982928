"""The gate of one GPU shared by its evaluation slots: check phases overlap, a timing runs alone,
a waiting timing holds back new check phases, and a big or unmeasured task overlaps nothing."""

import threading

from kernelevo.gpu_gate import GpuGate

SMALL, BIG = 0.1, 40.0  # GiB, on a 100 GiB device with 2 slots: the limit is 100 / 6


def gate_knowing(*tasks: tuple[str, float]) -> GpuGate:
    gate = GpuGate(2)
    for key, need in tasks:
        gate.learn(key, need, 100.0)
    return gate


def in_thread(action):
    """Run `action` in a thread; the event is set once it returned (the gate let it in)."""
    done = threading.Event()
    out = []

    def run():
        out.append(action())
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done, out


def test_check_phases_overlap():
    gate = gate_knowing(("t", SMALL))
    a, b = gate.hold("t"), gate.hold("t")  # the second does not wait for the first
    assert a.held_as == b.held_as == "shared"
    a.release()
    b.release()


def test_a_timing_waits_for_check_phases_holds_back_new_ones_and_runs_alone():
    gate = gate_knowing(("t", SMALL))
    timer, checker = gate.hold("t"), gate.hold("t")
    timed, _ = in_thread(timer.time_alone)
    assert not timed.wait(0.3)  # a check phase is still in
    late, late_hold = in_thread(lambda: gate.hold("t"))
    assert not late.wait(0.3)  # writer preference: no new check phase while a timing waits
    checker.release()
    assert timed.wait(5) and timer.held_as == "exclusive"
    assert not late.wait(0.3)  # the timing has the GPU alone
    timer.release()
    assert late.wait(5) and late_hold[0].held_as == "shared"
    late_hold[0].release()
    purposes = [(i.held_as, i.purpose) for i in timer.intervals]
    assert purposes == [("shared", "checks"), ("exclusive", "timing")]
    assert all(i.end is not None and i.end >= i.start for i in timer.intervals)


def test_a_big_task_holds_the_gpu_alone_for_its_whole_verdict():
    gate = gate_knowing(("small", SMALL), ("big", BIG))
    small = gate.hold("small")
    big_in, big = in_thread(lambda: gate.hold("big"))
    assert not big_in.wait(0.3)  # waits for the check phase already in
    again, _ = in_thread(lambda: gate.hold("small"))
    assert not again.wait(0.3)  # and, waiting, holds back new ones
    small.release()
    assert big_in.wait(5) and big[0].held_as == "exclusive"
    big[0].learned(BIG, 100.0)  # its begin confirms it is big: it stays alone
    assert big[0].held_as == "exclusive" and not again.wait(0.3)
    big[0].release()
    assert again.wait(5)


def test_an_unmeasured_task_is_alone_until_its_begin_says_it_is_small():
    gate = GpuGate(2)
    first = gate.hold("t")
    assert first.held_as == "exclusive"
    second_in, second = in_thread(lambda: gate.hold("t"))
    assert not second_in.wait(0.3)
    first.learned(SMALL, 100.0)
    assert first.held_as == "shared"
    assert second_in.wait(5) and second[0].held_as == "shared"
    assert [i.purpose for i in first.intervals] == ["memory", "checks"]
    first.release()
    second[0].release()


def test_one_slot_per_gpu_never_waits_on_memory():
    gate = GpuGate(1)
    hold = gate.hold("unknown")
    assert hold.held_as == "shared" and not gate.needs_gpu_alone("unknown")
    hold.time_alone()
    assert hold.held_as == "exclusive"
    hold.release()


def test_a_clean_up_after_timing_lets_check_phases_in_but_no_other_timing():
    gate = gate_knowing(("t", SMALL))
    first = gate.hold("t")
    first.time_alone()
    late, late_hold = in_thread(lambda: gate.hold("t"))
    assert not late.wait(0.3)  # the timing has the GPU alone
    first.timing_done()
    assert late.wait(5) and late_hold[0].held_as == "shared"  # a check phase beside the clean-up
    timer_in, _ = in_thread(late_hold[0].time_alone)
    assert not timer_in.wait(0.3)  # no timing while the clean-up holds the gate
    first.release()
    assert timer_in.wait(5) and late_hold[0].held_as == "exclusive"
    late_hold[0].release()
    purposes = [(i.held_as, i.purpose) for i in first.intervals]
    assert purposes == [("shared", "checks"), ("exclusive", "timing"), ("shared", "cleanup")]


def test_a_big_task_keeps_the_gpu_through_its_clean_up():
    gate = gate_knowing(("small", SMALL), ("big", BIG))
    big = gate.hold("big")
    big.time_alone()
    big.timing_done()
    assert big.held_as == "exclusive"
    other, _ = in_thread(lambda: gate.hold("small"))
    assert not other.wait(0.3)  # its memory is not freed yet
    big.release()
    assert other.wait(5)


def test_a_check_phase_steps_aside_for_a_waiting_timing_with_its_candidate_stopped():
    gate = gate_knowing(("t", SMALL))
    timer, checker = gate.hold("t"), gate.hold("t")
    events: list[str] = []
    timed, _ = in_thread(timer.time_alone)
    assert not timed.wait(0.3)  # the check phase is still in
    paused, out = in_thread(
        lambda: checker.pause_for_timing(
            lambda: events.append("stop"), lambda: events.append("resume")
        )
    )
    assert timed.wait(5) and timer.held_as == "exclusive"  # the timing did not wait for the checks
    assert events == ["stop"] and not paused.wait(0.3)  # still stepped aside while it times
    timer.timing_done()  # its clean-up is shared: the check phase goes on
    assert paused.wait(5) and out == [True] and events == ["stop", "resume"]
    assert checker.held_as == "shared" and checker.paused_s > 0
    assert timer.record()["timing_waited_s"] >= 0.3 and checker.record()["paused_s"] > 0
    assert checker.record()["timing_waited_s"] == 0  # a check phase's waits are not its timing's
    timer.release()
    checker.release()
    assert [i.purpose for i in checker.intervals] == ["checks", "checks"]
    held = checker.intervals
    timing = next(i for i in timer.intervals if i.purpose == "timing")
    assert held[0].end <= timing.start and timing.end <= held[1].start


def test_a_check_phase_goes_on_when_no_timing_waits():
    gate = gate_knowing(("t", SMALL))
    a, b = gate.hold("t"), gate.hold("t")
    calls: list[str] = []
    assert not a.pause_for_timing(lambda: calls.append("stop"), lambda: calls.append("resume"))
    assert calls == [] and a.held_as == "shared" and len(a.intervals) == 1
    a.release()
    b.release()


def test_a_big_task_never_steps_aside():
    gate = gate_knowing(("small", SMALL), ("big", BIG))
    big = gate.hold("big")
    assert big.held_as == "exclusive"
    gate._timers_waiting += 1  # as if a timing waited (none can: the big task is alone)
    try:
        assert not big.pause_for_timing(lambda: None, lambda: None)
    finally:
        gate._timers_waiting -= 1
    assert big.held_as == "exclusive"
    big.release()


def test_a_verdict_after_its_timing_steps_aside_for_the_next_and_keeps_its_purpose():
    gate = gate_knowing(("t", SMALL))
    first = gate.hold("t")
    first.time_alone()
    first.timing_done()  # its timed outputs are checked next, shared
    second = gate.hold("t")  # a check phase may enter
    waiting, _ = in_thread(second.time_alone)
    assert not waiting.wait(0.3)  # a clean-up that does not step aside holds the next timing back
    stepped, _ = in_thread(lambda: first.pause_for_timing(lambda: None, lambda: None))
    assert waiting.wait(5) and second.held_as == "exclusive"
    assert not stepped.wait(0.3)
    second.release()
    assert stepped.wait(5)
    first.release()
    assert [i.purpose for i in first.intervals] == ["checks", "timing", "cleanup", "cleanup"]


def test_the_cross_check_goes_alone_first_once_shared_first_attempts_mostly_needed_a_retry():
    from kernelevo.gpu_gate import SharedFirstAttempts

    odds = SharedFirstAttempts()
    assert not odds.alone_first()  # nothing known: shared first
    for retried in (True, True, True):
        odds.record(retried)
    assert not odds.alone_first()  # too few to say
    odds.record(False)
    odds.record(False)
    odds.record(False)
    assert not odds.alone_first()  # half retried: sharing still pays
    odds.record(True)
    picks = [odds.alone_first() for _ in range(2 * SharedFirstAttempts.EVERY)]
    # alone, except every EVERY-th, tried shared again so the record follows the load
    assert picks.count(False) == 2 and picks[SharedFirstAttempts.EVERY - 1] is False, picks
    for _ in range(SharedFirstAttempts.WINDOW):
        odds.record(False)  # the load went: shared first attempts pass again
    assert not odds.alone_first()
