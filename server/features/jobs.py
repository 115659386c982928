"""Search jobs over LSP: `kernelevo/optimize` (request; cancelling it stops the search),
`kernelevo/jobs`, `kernelevo/cancel`, the `kernelevo.optimize` / `kernelevo.cancel`
commands, and `$/progress` for each job (a progress Cancel stops the job too).

The search runs in a child process started only here, on an explicit request. The request
names the target by the id its lens or action carried; the search itself finds it in the file
(and refuses in one line when it is not there), so starting a job waits for no analysis.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from kernelevo_server.app import KernelEvoServer
from kernelevo_server.jobs.manager import ACTIVE, Job, JobChanged, JobEvent, JobSpec
from kernelevo_server.jobs.search_child import GRACE_S
from kernelevo_server.params import as_dict
from kernelevo_server.present import progress_message, target_label
from kernelevo_server.rpc_faults import KernelEvoError
from lsprotocol import types

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "triton", "cuda")


def _saved(ls: KernelEvoServer, uri: str, path: str) -> bool:
    doc = ls.open_document(uri)
    if doc is None:
        return True
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read() == doc.source
    except OSError:
        return False


_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "backend": (str,),
    "provider": (str,),
    "model": (str,),
    "budgetTokens": (int,),
    "iterations": (int,),
    "budgetUsd": (int, float),
}


def check_options(options: dict[str, Any]) -> None:
    for key, kinds in _OPTION_TYPES.items():
        value = options.get(key)
        if value is not None and (not isinstance(value, kinds) or isinstance(value, bool)):
            raise KernelEvoError(
                f"{key} must be a {' or '.join(k.__name__ for k in kinds)}, not {value!r}"
            )


def start_job(ls: KernelEvoServer, uri: str, target_id: str, options: dict[str, Any]) -> Job:
    check_options(options)
    path = ls.path_of(uri)
    if not _saved(ls, uri, path):
        raise KernelEvoError(
            f"save {os.path.basename(path)} first: the search reads the file from disk"
        )
    name = target_label(target_id)
    running = ls.jobs.active_for(path, target_id)
    if running is not None:
        raise KernelEvoError(f"{name} is already being optimized (job {running.id})")
    s = ls.settings
    backend = options.get("backend") or s.backend
    if backend not in BACKENDS:
        raise KernelEvoError(f"unknown backend '{backend}'; expected one of {', '.join(BACKENDS)}")
    spec = JobSpec(
        uri=uri,
        path=path,
        target_id=target_id,
        target_name=name,
        backend=backend,
        provider=options.get("provider") or s.provider,
        model=options.get("model") or s.model,
        budget_tokens=options.get("budgetTokens") or s.budgetTokens,
        budget_usd=options.get("budgetUsd") or s.budgetUsd,
        iterations=options.get("iterations") or s.iterations,
        gpu=s.gpu,
        store_path=str(ls.results.store_path),
        cwd=ls.root_path or os.path.dirname(path),
        search_command=s.searchCommand,
    )
    return ls.jobs.start(spec)


class Progress:
    """`$/progress` for one job on one token."""

    def __init__(self, ls: KernelEvoServer, job: Job, token: types.ProgressToken) -> None:
        self.ls, self.job, self.token = ls, job, token
        self.ended = False
        ls.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title=f"KernelEvo: optimizing {job.spec.target_name}",
                cancellable=True,
                message=progress_message(job),
                percentage=0,
            ),
        )

    def update(self, job: Job, event: JobEvent) -> None:
        if self.ended or job is not self.job:
            return
        if isinstance(event, JobChanged) and event.state == "ended":
            self.ended = True
            self.ls.work_done_progress.end(
                self.token, types.WorkDoneProgressEnd(message=job.message or job.state)
            )
            return
        pct = None
        if job.iterations_planned:
            pct = max(0, min(100, int(100 * job.iteration / max(1, int(job.iterations_planned)))))
        self.ls.work_done_progress.report(
            self.token,
            types.WorkDoneProgressReport(
                message=progress_message(job), percentage=pct, cancellable=True
            ),
        )


def register(server: KernelEvoServer) -> None:
    progress_by_job: dict[str, Progress] = {}
    job_by_token: dict[Any, str] = {}
    from_command: set[str] = set()

    def on_job(job: Job, event: JobEvent) -> None:
        p = progress_by_job.get(job.id)
        if p is not None:
            p.update(job, event)
        if not (isinstance(event, JobChanged) and event.state == "ended"):
            return
        progress_by_job.pop(job.id, None)
        name = job.spec.target_name
        if job.state == "failed":
            server.show(f"optimizing {name} failed: {job.message}", types.MessageType.Error)
        elif job.id in from_command and job.state == "done":
            server.show(f"{name}: {job.message}")
        from_command.discard(job.id)

    server.job_listeners.append(on_job)

    async def attach_progress(ls: KernelEvoServer, job: Job, token: Any) -> None:
        if token is None and ls.supports("window.work_done_progress"):
            token = f"kernelevo-job-{job.id}"
            try:
                await ls.work_done_progress.create_async(token)
            except Exception as exc:
                logger.info("window/workDoneProgress/create failed: %s", exc)
                token = None
        if token is None or job.state not in ACTIVE:
            return
        job_by_token[token] = job.id
        progress_by_job[job.id] = Progress(ls, job, token)

    @server.feature("kernelevo/optimize")
    async def optimize(ls: KernelEvoServer, params: Any) -> dict[str, Any]:
        p = as_dict(params)
        if not isinstance(p.get("uri"), str) or not isinstance(p.get("targetId"), str):
            raise KernelEvoError("kernelevo/optimize needs {uri: string, targetId: string}")
        job = start_job(ls, p["uri"], p["targetId"], p)
        await attach_progress(ls, job, p.get("workDoneToken"))
        try:
            await ls.jobs.wait(job)
        except asyncio.CancelledError:
            ls.jobs.cancel(job.id)
            if job.task is not None:
                await asyncio.wait({job.task}, timeout=GRACE_S + 5)
            raise
        return job.result()

    @server.feature("kernelevo/jobs")
    def list_jobs(ls: KernelEvoServer, params: Any) -> list[dict[str, Any]]:
        return [j.to_json() for j in ls.jobs.list()]

    @server.feature("kernelevo/cancel")
    def cancel(ls: KernelEvoServer, params: Any) -> dict[str, bool]:
        job_id = as_dict(params).get("jobId")
        if not isinstance(job_id, (str, int)) or isinstance(job_id, bool):
            raise KernelEvoError("kernelevo/cancel needs {jobId: string}")
        return {"cancelled": ls.jobs.cancel(str(job_id))}

    @server.command("kernelevo.optimize")
    async def optimize_command(ls: KernelEvoServer, *args: Any) -> dict[str, Any]:
        uri, target_id = ([*list(args), None, None])[:2]
        backend = args[2] if len(args) > 2 else None
        if not uri or not target_id:
            raise KernelEvoError("kernelevo.optimize needs [uri, targetId, backend?]")
        try:
            job = start_job(ls, str(uri), str(target_id), {"backend": backend})
        except KernelEvoError as exc:
            ls.show(exc.message, types.MessageType.Error)
            raise
        from_command.add(job.id)
        await attach_progress(ls, job, None)
        return {"jobId": job.id}

    @server.command("kernelevo.cancel")
    def cancel_command(ls: KernelEvoServer, *args: Any) -> dict[str, bool]:
        return {"cancelled": ls.jobs.cancel(str(args[0])) if args else False}

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(ls: KernelEvoServer, params: types.WorkDoneProgressCancelParams) -> None:
        job_id = job_by_token.get(params.token)
        if job_id is not None:
            ls.jobs.cancel(job_id)
