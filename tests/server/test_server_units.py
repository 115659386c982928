"""The server's pieces on their own: rebasing an edit, shifting targets, settings, and
the child-process runner (group kill, crash, SIGTERM ignored, stray grandchild)."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest
from kernelevo_server.analyzer import TargetInfo, shift_targets
from kernelevo_server.jobs.search_child import GpuSlots, run_search
from kernelevo_server.rebase import RebaseConflict, apply_edits, rebase
from kernelevo_server.settings import Settings, merge
from lsp_harness import alive

from kernelevo.search.events import ProgressEvent, Status


def test_rebase_moves_hunks_past_unsaved_edits_elsewhere():
    old = "a\nb\nc\nd\ne\n"
    new = "a\nB\nc\nd\ne\nf\n"
    current = "x\na\nb\nc\nd2\ne\n"
    assert apply_edits(current, rebase(old, new, current)) == "x\na\nB\nc\nd2\ne\nf\n"
    assert apply_edits(old, rebase(old, new, old)) == new


def test_rebase_refuses_when_the_edited_lines_changed():
    with pytest.raises(RebaseConflict):
        rebase("a\nb\nc\n", "a\nB\nc\n", "a\nb!\nc\n")


def _t(start: int, end: int) -> TargetInfo:
    return TargetInfo(
        id="t",
        kind="module",
        name="M",
        qualname="M",
        path="p",
        start_line=start,
        start_col=0,
        end_line=end,
        end_col=0,
    )


def test_targets_shift_with_edits():
    above, inside, below = _t(10, 20), _t(30, 40), _t(50, 60)
    targets = [above, inside, below]
    shift_targets(targets, 2, 2, "x\ny\n")  # two lines inserted at the top
    assert [(t.start_line, t.end_line) for t in targets] == [(12, 22), (32, 42), (52, 62)]
    shift_targets(targets, 35, 37, "")  # two lines deleted inside the second
    assert [(t.start_line, t.end_line, t.edited) for t in targets] == [
        (12, 22, False),
        (32, 40, True),
        (50, 60, False),
    ]


def test_settings_drop_secrets_and_untrusted_commands():
    s, warnings = merge(
        Settings(),
        {
            "kernelevo": {
                "openaiApiKey": "sk",
                "searchCommand": ["x"],
                "gpu": "1",
                "budgetUsd": "0.5",
                "backend": "cuda",
            }
        },
        trusted=False,
    )
    assert (s.gpu, s.budgetUsd, s.backend, s.searchCommand) == (1, 0.5, "cuda", None)
    assert len(warnings) == 2 and "sk" not in " ".join(warnings)
    s, warnings = merge(
        s, {"searchCommand": ["python", "fake.py"], "backend": "nope"}, trusted=True
    )
    assert (
        s.searchCommand == ["python", "fake.py"]
        and s.backend == "cuda"
        and "backend" in warnings[0]
    )


CHILD = r"""
import signal, subprocess, sys, time
from kernelevo.search.events import Done, ProgressEvent, Started, Status
mode = sys.argv[1]
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(Status(f"worker {worker.pid}").line(), flush=True)
print(Started("r1").line(), flush=True)
if mode == "ignore_term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode == "crash":
    print("not json", flush=True)
    print('{"event": "progress", "run_id": "r1"}', flush=True)
    sys.stderr.write("boom\n"); sys.exit(4)
if mode == "exit_leaving_worker":
    print(Done("r1", "no_improvement", {}).line(), flush=True)
    sys.exit(0)
for i in range(1000):
    step = ProgressEvent("r1", "iteration", i + 1, None, "llm", "verified", None, "ok", iteration=i)
    print(step.line(), flush=True)
    time.sleep(0.05)
"""


def _worker_pid(events: list) -> int:
    """The stand-in's helper process, which it names in its first event."""
    assert isinstance(events[0], Status), events
    return int(events[0].message.split()[1])


async def _start(mode: str, events: list, **kw):
    task = asyncio.ensure_future(
        run_search([sys.executable, "-c", CHILD, mode], on_event=events.append, **kw)
    )
    deadline = time.monotonic() + 10
    while not events and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return task, _worker_pid(events)


@pytest.mark.asyncio
async def test_cancel_kills_the_whole_group_even_if_sigterm_is_ignored():
    events: list = []
    task, worker = await _start("ignore_term", events, grace_s=0.5)
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(50):
        if not alive(worker):
            break
        await asyncio.sleep(0.05)
    assert not alive(worker)
    assert isinstance(events[-1], ProgressEvent)


@pytest.mark.asyncio
async def test_a_crash_is_an_outcome_not_an_exception():
    events: list = []
    outcome = await run_search([sys.executable, "-c", CHILD, "crash"], on_event=events.append)
    assert outcome.returncode == 4 and outcome.done is None and "boom" in outcome.stderr_tail
    # a line that is no event (not JSON; a progress event without its fields) is skipped
    assert [e.kind for e in events] == ["status", "start"]


@pytest.mark.asyncio
async def test_a_worker_left_behind_does_not_hang_the_job():
    events: list = []
    t0 = time.monotonic()
    outcome = await asyncio.wait_for(
        run_search([sys.executable, "-c", CHILD, "exit_leaving_worker"], on_event=events.append), 15
    )
    assert outcome.returncode == 0 and outcome.done is not None
    assert outcome.done.status == "no_improvement"
    assert time.monotonic() - t0 < 8
    await asyncio.sleep(0.2)
    assert not alive(_worker_pid(events))


@pytest.mark.asyncio
async def test_gpu_slots_queue_beyond_the_limit():
    slots, order = GpuSlots(), []

    async def job(name: str, key: str) -> None:
        await slots.acquire(key, lambda: 1)
        order.append(f"{name}+")
        await asyncio.sleep(0.05)
        order.append(f"{name}-")
        await slots.release(key)

    await asyncio.gather(job("a", "gpu0"), job("b", "gpu0"), job("c", "gpu1"))
    assert order.index("a-") < order.index("b+")
    assert order.index("c+") < order.index("a-")


def test_progress_reads_the_phase_and_the_search_s_own_message():
    from kernelevo_server.jobs.manager import Job, JobSpec
    from kernelevo_server.present import phase_label, progress_message

    job = Job(
        id="1",
        spec=JobSpec(uri="u", path="p", target_id="t", target_name="T"),
        state="running",
    )
    assert progress_message(job) == "starting · 0 tokens · $0.00"
    job.apply_event(Status("offline candidates: compiling with Inductor"))
    assert progress_message(job) == (
        "starting · offline candidates: compiling with Inductor · 0 tokens · $0.00"
    )
    job.apply_event(
        ProgressEvent(
            "r1",
            "seed",
            3,
            7,
            "template:row_softmax",
            "verified",
            1.8,
            "seed 3 of 7 (template:row_softmax): verified, 1.80x",
            best_speedup=1.8,
            verified=True,
        )
    )
    # the search's message names its phase: not repeated
    assert (
        progress_message(job)
        == "seed 3 of 7 (template:row_softmax): verified, 1.80x · best 1.80x · 0 tokens · $0.00"
    )
    assert job.run_id == "r1" and job.phase == "seed" and job.iterations_planned is None
    job.apply_event(
        ProgressEvent(
            "r1",
            "iteration",
            2,
            20,
            "llm",
            "incorrect",
            None,
            "iteration 2 of 20 (llm): incorrect",
            iteration=2,
            tokens=12_300,
            cost_usd=0.12,
        )
    )
    assert (job.iteration, job.iterations_planned, job.best_speedup) == (2, 20, 1.8)
    assert progress_message(job).endswith("best 1.80x · 12.3k tokens · $0.12")
    assert phase_label(None, 0) == "starting" and phase_label("tune", 0) == "tuning"
    assert phase_label("repair", 2) == "repair" and phase_label("iteration", 5) == "iteration 5"


def test_the_server_package_has_a_unique_import_name(tmp_path):
    """Installed, the `server/` folder is `kernelevo_server`: no top-level `server` in site-packages."""
    import subprocess

    import kernelevo_server

    assert os.path.realpath(kernelevo_server.__file__).endswith(
        os.path.join("server", "__init__.py")
    )
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run(
        [sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(tmp_path)],
        cwd=repo,
        check=True,
        capture_output=True,
        timeout=120,
    )
    (info,) = tmp_path.glob("*.egg-info")
    assert (info / "top_level.txt").read_text().split() == ["kernelevo", "kernelevo_server"]
    sources = (info / "SOURCES.txt").read_text().split()
    assert "server/features/hover.py" in sources and "server/rpc_faults.py" in sources


def test_generated_files_get_no_hints():
    from kernelevo_server.features.diagnostics import is_generated

    assert is_generated(
        [
            '"""Regression test for KernelEvo\'s kernel for f (run r), generated by `kernelevo apply`.\n'
        ]
    )
    assert not is_generated(["import torch\n"])
