"""The server's jobs: one per optimize request, queued per GPU, listed and cancellable.

A job is an asyncio task that owns its child process; the request that started it (or
`kernelevo/cancel`, or a progress Cancel) cancels the task, which stops the process.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from kernelevo_server.jobs.search_child import GpuSlots, Outcome, run_search

from kernelevo.search.events import (
    Done,
    ProgressEvent,
    SearchEvent,
    SearchFailed,
    Started,
    Status,
)

logger = logging.getLogger(__name__)

ACTIVE = ("queued", "running")
REFUSAL = "kernelevo: error: "  # how the CLI prints a UserError (kernelevo/cli/__init__.py)
_KEEP_FINISHED = 100


@dataclass
class JobSpec:
    uri: str
    path: str
    target_id: str
    target_name: str
    backend: str = "auto"
    provider: str | None = None
    model: str | None = None
    budget_tokens: int | None = None
    budget_usd: float | None = None
    iterations: int | None = None
    gpu: int | None = None
    store_path: str | None = None
    cwd: str | None = None
    search_command: list[str] | None = None

    @property
    def gpu_key(self) -> str:
        return "default" if self.gpu is None else f"gpu{self.gpu}"

    def command(self) -> list[str]:
        prefix = list(self.search_command or [sys.executable, "-m", "kernelevo", "optimize"])
        args = [f"{self.path}::{self.target_id}", "--progress", "json", "--backend", self.backend]
        for flag, value in (
            ("--provider", self.provider),
            ("--model", self.model),
            ("--budget-tokens", self.budget_tokens),
            ("--budget-usd", self.budget_usd),
            ("--iterations", self.iterations),
        ):
            if value is not None:
                args += [flag, str(value)]
        return prefix + args

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.store_path:
            env["KERNELEVO_STORE"] = self.store_path
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(self.gpu)
        return env


@dataclass(frozen=True)
class JobChanged:
    """The server's own word on a job (queued behind another on its GPU, running, ended), beside
    the search's events."""

    state: Literal["queued", "running", "ended"]
    message: str = ""


JobEvent = SearchEvent | JobChanged


@dataclass
class Job:
    id: str
    spec: JobSpec
    state: str = "queued"  # queued | running | done | failed | cancelled
    status: str | None = None  # the search's own status once it ends
    run_id: str | None = None
    iteration: int = 0
    evaluated: int = 0
    iterations_planned: int | None = None
    best_speedup: float | None = None
    best_speedup_compile: float | None = None
    phase: str | None = None  # the search's phase (seed / tune / iteration / repair) when it says
    verified: bool = False  # a verified candidate exists (its speed may be unmeasured)
    outcome: dict[str, Any] = field(
        default_factory=dict
    )  # RunOutcome.to_dict() from the "done" event
    tokens: int = 0
    cost_usd: float = 0.0
    message: str = ""
    pid: int | None = None
    cancelling: bool = False  # asked to stop; the search is closing its workers
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    task: asyncio.Task | None = None

    def apply_event(self, event: SearchEvent) -> None:
        """Where the search stands, from its latest event."""
        if isinstance(event, (Started, ProgressEvent, Done)):
            self.run_id = event.run_id or self.run_id
        if isinstance(event, (ProgressEvent, Done)):
            self.tokens, self.cost_usd = event.tokens, event.cost_usd
            if event.best_speedup is not None:
                self.best_speedup = event.best_speedup
            if event.best_speedup_compile is not None:
                self.best_speedup_compile = event.best_speedup_compile
        if isinstance(event, ProgressEvent):
            self.iteration, self.evaluated = event.iteration, event.evaluated
            self.phase, self.verified = event.phase, event.verified
            if event.phase in ("iteration", "repair") and event.total:
                self.iterations_planned = event.total
        if isinstance(event, Done):
            self.outcome = dict(event.outcome)
        if isinstance(event, (ProgressEvent, Status, SearchFailed)) and event.message:
            self.message = event.message

    def to_json(self) -> dict[str, Any]:
        return {
            "jobId": self.id,
            "uri": self.spec.uri,
            "targetId": self.spec.target_id,
            "runId": self.run_id,
            "state": self.state,
            "status": self.status,
            "iteration": self.iteration,
            "bestSpeedup": self.best_speedup,
            "tokens": self.tokens,
            "costUsd": self.cost_usd,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "message": self.message,
            "backend": self.spec.backend,
            "gpu": self.spec.gpu,
        }

    def result(self) -> dict[str, Any]:
        return {
            "jobId": self.id,
            "runId": self.run_id,
            "status": self.status,
            "bestSpeedup": self.best_speedup,
            "bestSpeedupCompile": self.best_speedup_compile,
            "tokens": self.tokens,
            "costUsd": self.cost_usd,
            "message": self.message,
            "outcome": self.outcome or None,
        }


class JobManager:
    def __init__(
        self,
        max_per_gpu: Callable[[], int],
        on_event: Callable[[Job, JobEvent], None] | None = None,
        on_end: Callable[[Job], None] | None = None,
    ) -> None:
        self._max_per_gpu = max_per_gpu
        self._on_event = on_event or (lambda job, event: None)
        self._on_end = on_end or (lambda job: None)
        self._slots = GpuSlots()
        self._jobs: dict[str, Job] = {}
        self._ids = itertools.count(1)

    def start(self, spec: JobSpec) -> Job:
        job = Job(id=str(next(self._ids)), spec=spec)
        self._jobs[job.id] = job
        job.task = asyncio.get_running_loop().create_task(
            self._run(job), name=f"kernelevo-job-{job.id}"
        )
        self._forget_old()
        return job

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(str(job_id))

    def list(self) -> list[Job]:
        return sorted(self._jobs.values(), key=lambda j: j.started_at, reverse=True)

    def active_for(self, path: str, target_id: str) -> Job | None:
        for job in self._jobs.values():
            if job.state in ACTIVE and job.spec.path == path and job.spec.target_id == target_id:
                return job
        return None

    def cancel(self, job_id: str) -> bool:
        job = self._jobs.get(str(job_id))
        if job is None or job.state not in ACTIVE or job.task is None:
            return False
        job.task.cancel()
        if not job.cancelling:  # the lens and the progress say so until the search has stopped
            job.cancelling = True
            self._emit(
                job, JobChanged("running" if job.state == "running" else "queued", "cancelling")
            )
        return True

    async def wait(self, job: Job) -> Job:
        assert job.task is not None
        await asyncio.wait({job.task})
        return job

    async def cancel_all(self) -> None:
        tasks = [j.task for j in self._jobs.values() if j.state in ACTIVE and j.task is not None]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=10)

    async def _run(self, job: Job) -> None:
        spec = job.spec
        acquired = False
        try:
            if self._slots.busy(spec.gpu_key) >= max(1, self._max_per_gpu()):
                job.message = f"queued: waiting for {spec.gpu_key}"
                self._emit(job, JobChanged("queued", job.message))
            await self._slots.acquire(spec.gpu_key, self._max_per_gpu)
            acquired = True
            job.state = "running"
            job.started_at = time.time()
            self._emit(job, JobChanged("running", "starting search"))

            def on_start(pid: int) -> None:
                job.pid = pid

            outcome = await run_search(
                spec.command(),
                env=spec.env(),
                cwd=spec.cwd,
                on_event=lambda e: self._on_search_event(job, e),
                on_start=on_start,
            )
            self._finish(job, outcome)
        except asyncio.CancelledError:
            job.state, job.status, job.message = "cancelled", "cancelled", "cancelled"
            raise
        except Exception as exc:  # e.g. the search command does not exist
            logger.exception("job %s failed to run", job.id)
            job.state, job.status, job.message = (
                "failed",
                "failed",
                f"could not run the search: {exc}",
            )
        finally:
            if acquired:
                await asyncio.shield(self._slots.release(spec.gpu_key))
            job.ended_at = time.time()
            job.pid = None
            try:
                self._on_end(job)
            except Exception:
                logger.exception("job end handler failed")

    def _on_search_event(self, job: Job, event: SearchEvent) -> None:
        job.apply_event(event)
        self._emit(job, event)

    def _emit(self, job: Job, event: JobEvent) -> None:
        try:
            self._on_event(job, event)
        except Exception:
            logger.exception("job event handler failed")

    def _finish(self, job: Job, outcome: Outcome) -> None:
        done = outcome.done
        if done is not None:
            job.apply_event(done)
            job.status = done.status or "failed"
            job.state = (
                "failed"
                if job.status == "failed"
                else ("cancelled" if job.status == "cancelled" else "done")
            )
            if job.status == "failed" and outcome.errors:
                job.message = outcome.errors[-1]
            elif job.status != "failed":
                job.message = _done_message(job)
            return
        job.state = job.status = "failed"
        last_err = (
            outcome.stderr_tail.strip().splitlines()[-1:] if outcome.stderr_tail.strip() else []
        )
        reason = (outcome.errors[-1:] or last_err or [""])[0]
        if reason.startswith(REFUSAL):  # the engine's one-line refusal: no target, bad file...
            job.message = reason[len(REFUSAL) :]
            return
        job.message = f"search exited with code {outcome.returncode}" + (
            f": {reason}" if reason else ""
        )

    def _forget_old(self) -> None:
        finished = [j for j in self.list() if j.state not in ACTIVE]
        for j in finished[_KEEP_FINISHED:]:
            self._jobs.pop(j.id, None)


def _done_message(job: Job) -> str:
    """The engine's own sentence for the run (kernelevo/outcome.py), e.g. 'verified, speed not
    measured without a GPU'; a search that sends no outcome is read from its status."""
    from kernelevo.outcome import RunOutcome, from_status

    outcome = (
        RunOutcome.from_dict(job.outcome)
        if job.outcome.get("kind")
        else from_status(
            job.status or "failed",
            verified=job.verified or job.best_speedup is not None,
            speedup_eager=job.best_speedup,
            speedup_compile=job.best_speedup_compile,
        )
    )
    job.outcome = outcome.to_dict()
    return outcome.headline()
