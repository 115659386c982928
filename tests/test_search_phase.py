"""The typed phase of a search step, the progress message built from it, and the run lock."""

import pytest

from kernelevo.phase import Phase
from kernelevo.search.progress import describe_step
from kernelevo.search.resume import ResumeError, RunLock, check_task


def test_phase_refuses_negative_numbers_and_unknown_kinds():
    with pytest.raises(ValueError):
        Phase("iteration", -1)
    with pytest.raises(ValueError):
        Phase("warmup", 0)  # type: ignore[arg-type]
    assert Phase.model(3, 0).kind == "iteration" and Phase.model(3, 2) == Phase("repair", 3, 2)


def test_progress_messages_speak_of_phases():
    assert describe_step(Phase("seed", 2), 7, "template:row_softmax", "verified", 1.8) == (
        3,
        "seed 3 of 7 (template:row_softmax): verified, 1.80x",
    )
    assert describe_step(Phase("repair", 3, 1), 20, "repair", "incorrect", None, 3) == (
        4,
        "iteration 4 of 20, repair 1 of 3 (repair): incorrect",
    )
    assert describe_step(Phase("tune", 0, 4), 12, "tune", "compile_error", None)[1] == (
        "tuning candidate 1, configuration 5 of 12 (tune): compile error"
    )


def test_second_holder_of_a_run_is_refused(tmp_path):
    first = RunLock(tmp_path, "run1").acquire()
    with pytest.raises(ResumeError, match="run run1 is being worked on by process"):
        RunLock(tmp_path, "run1").acquire()
    first.release()
    RunLock(tmp_path, "run1").acquire().release()


def test_changed_task_is_not_resumed():
    with pytest.raises(ResumeError, match="changed since run r1 began"):
        check_task("r1", "abc", "def", "softmax.py")
    check_task("r1", "abc", "abc", "softmax.py")
