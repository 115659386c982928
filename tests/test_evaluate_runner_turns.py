"""An evaluator with two runner hosts taking turns (`Evaluator(runner_hosts=2)`): each verdict goes
to the host that sat the last one out, whose spare candidate process started meanwhile; the
spare waits in a sandbox of its own, out of reach of the candidate running beside it; and no
verdict starts before both hosts have swept what their last candidates left."""

import pytest
from support import CANDIDATES, DEVICE, EXAMPLES

from kernelevo.evaluate import Evaluator
from kernelevo.task import read_task
from kernelevo.verify import _run_dynamic, default_size

SOFTMAX = EXAMPLES / "softmax.py"
GOOD = CANDIDATES / "softmax" / "triton_ok.py"

KILLER = r"""
import os, signal
me, parent = os.getpid(), os.getppid()
hit = []
for name in os.listdir("/proc"):
    if name.isdigit() and int(name) not in (1, me, parent):
        try:
            os.kill(int(name), signal.SIGKILL)
            hit.append(int(name))
        except OSError:
            pass
raise RuntimeError(f"killed {hit}")
"""


@pytest.fixture(scope="module")
def turns():
    ev = Evaluator(DEVICE, runner_hosts=2)
    ev.warm()
    yield ev
    ev.close()


def _judge(ev, cand):
    return _run_dynamic(
        read_task(SOFTMAX),
        cand,
        "triton",
        [],
        ev,
        DEVICE,
        default_size(DEVICE),
        120.0,
        None,
        measure=False,
    )


def _pid(worker):
    assert worker.alive and worker.proc is not None
    return worker.proc.pid


def test_verdicts_alternate_between_the_two_hosts_each_handing_out_its_spare(turns):
    hosts = {_pid(w) for w in turns.runners}
    assert len(hosts) == 2
    used = []
    for _ in range(3):
        used.append(_pid(turns.runner))
        verdict = _judge(turns, GOOD)
        assert verdict.status == "verified", verdict.reason
        assert verdict.phases["spare_taken"] is True, verdict.phases
    assert used[0] != used[1] and used[0] == used[2], used
    assert {_pid(w) for w in turns.runners} == hosts  # neither host was replaced


def test_a_candidate_killing_all_it_can_see_leaves_the_other_hosts_spare_alone(turns, tmp_path):
    killer = tmp_path / "killer.py"
    killer.write_text(KILLER)
    other = turns.runners[1 - turns.runners.index(turns.runner)]
    other_pid = _pid(other)
    hit = _judge(turns, killer)
    assert "killed" in hit.reason, hit.reason
    after = _judge(turns, GOOD)  # on the other host, which waited with its spare started
    assert after.status == "verified", after.reason
    assert after.phases["spare_taken"] is True, (hit.reason, after.phases)
    assert _pid(other) == other_pid, hit.reason


def test_a_verdict_starts_only_once_the_other_host_has_swept_its_last_candidate(turns, monkeypatch):
    """The host that ran the last candidate answers `close` before it sweeps what that candidate
    left; the next verdict, on the other host, pings it too before the exchange folder is
    cleared and the new candidate's cache installed."""
    from kernelevo.worker import cache_folders

    _judge(turns, GOOD)
    last = turns.runners[1 - turns.runners.index(turns.runner)]
    seen = []
    for name, w in (("last", last), ("next", turns.runner)):
        request = w.request

        def spy(message, timeout, name=name, request=request):
            seen.append(f"{message.get('op')} to {name}")
            return request(message, timeout)

        monkeypatch.setattr(w, "request", spy)
    clear = cache_folders.clear
    monkeypatch.setattr(
        cache_folders, "clear", lambda root: seen.append("clear exchange") or clear(root)
    )
    assert _judge(turns, GOOD).status == "verified"
    assert seen.index("ping to last") < seen.index("open to next"), seen
    if "clear exchange" in seen:
        assert seen.index("ping to last") < seen.index("clear exchange"), seen


def test_the_dispatcher_gives_every_slot_its_hosts_and_starts_them_all():
    from kernelevo.dispatch.local import LocalDispatcher

    d = LocalDispatcher("cpu", runner_hosts=2)
    try:
        d.warm()
        runners = [w for s in d.pool for w in s.handle.runners]
        assert len(runners) == 2 * len(d.pool) and all(w.alive for w in runners)
    finally:
        d.close()
