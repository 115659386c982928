"""The watchdog that keeps process and memory bounds where no cgroup can be made: one thread
and one reading of the process table per round for every sandbox of the process, however many
(a thread per sandbox spent two cores of an 8-slot search on reading /proc)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time

from kernelevo.sandbox.spec import Limits
from kernelevo.sandbox.watchdog import _WATCHER, ProcessTable, Watchdog, descendants


def _group(script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sh", "-c", script], start_new_session=True)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _wait_for(what, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.05)
    return False


def _watchdog_threads() -> int:
    return sum(t.name == "sandbox-watchdog" for t in threading.enumerate())


def test_many_sandboxes_share_one_thread_and_one_reading_a_round():
    before = _WATCHER.watching()  # sandboxes of other tests in this process may be watched
    procs = [_group("sleep 30") for _ in range(12)]
    dogs = [
        Watchdog(p.pid, Limits(processes=64), lambda: None, processes=True, memory=False)
        for p in procs
    ]
    try:
        assert _watchdog_threads() == 1
        start = _WATCHER.rounds
        time.sleep(1.0)
        rounds = _WATCHER.rounds - start
        assert 3 <= rounds <= 12, rounds  # ~10 a second for all twelve, not ~10 for each
        assert _watchdog_threads() == 1
    finally:
        for d in dogs:
            d.stop()
        for p in procs:
            _kill_group(p)
    assert _wait_for(lambda: _WATCHER.watching() == before)
    if before == 0:
        assert _wait_for(lambda: _watchdog_threads() == 0)  # nothing watched: the thread ends


def test_a_sandbox_past_its_bound_is_killed_and_the_others_stay_watched(tmp_path):
    trigger = tmp_path / "fork now"
    quiet = _group(
        f"while [ ! -e '{trigger}' ]; do sleep 0.05; done; sleep 30 & sleep 30 & sleep 30 & wait"
    )
    forking = _group("sleep 30 & sleep 30 & sleep 30 & sleep 30 & wait")
    killed: list[str] = []

    def kill(name: str, proc: subprocess.Popen[bytes]) -> None:
        killed.append(name)
        _kill_group(proc)

    quiet_dog = Watchdog(
        quiet.pid, Limits(processes=2), lambda: kill("quiet", quiet), processes=True, memory=False
    )
    forking_dog = Watchdog(
        forking.pid,
        Limits(processes=2),
        lambda: kill("forking", forking),
        processes=True,
        memory=False,
    )
    try:
        assert _wait_for(lambda: forking.poll() is not None)
        assert forking_dog.tripped == "more than 2 processes" and killed == ["forking"]
        time.sleep(0.3)
        assert quiet_dog.tripped == "" and quiet.poll() is None
        trigger.write_text("")  # the quiet one is still watched: past its bound now, it goes too
        assert _wait_for(lambda: quiet.poll() is not None)
        assert quiet_dog.tripped == "more than 2 processes" and killed == ["forking", "quiet"]
    finally:
        quiet_dog.stop()
        forking_dog.stop()
        _kill_group(quiet)
        _kill_group(forking)


def test_a_process_gone_is_no_longer_watched():
    proc = _group("sleep 0.2")
    before = _WATCHER.watching()
    Watchdog(proc.pid, Limits(processes=8), lambda: None, processes=True, memory=False)
    assert _WATCHER.watching() == before + 1
    proc.wait(timeout=10)
    assert _wait_for(lambda: _WATCHER.watching() == before)


def test_an_exited_process_not_yet_reaped_is_no_longer_watched():
    proc = _group("exit 0")
    before = _WATCHER.watching()
    assert _wait_for(lambda: ProcessTable().zombie(proc.pid))
    Watchdog(proc.pid, Limits(processes=8), lambda: None, processes=True, memory=False)
    try:
        assert _wait_for(lambda: _WATCHER.watching() == before)
    finally:
        proc.wait(timeout=10)


def test_the_table_finds_every_descendant_once():
    proc = _group("sleep 30 & (sleep 30 & wait) & wait")
    try:
        assert _wait_for(lambda: len(descendants(proc.pid)) == 3)
        table = ProcessTable()
        assert sorted(table.below(proc.pid)) == sorted(descendants(proc.pid))
        assert proc.pid in table.facts
    finally:
        _kill_group(proc)
