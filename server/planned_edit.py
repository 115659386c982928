"""What Apply would change: the planned rewrite, checked against the run and rebuilt on
the document's current text.

Refuses (with a message for the user) when the target's text differs from the text the
search optimised (its source hash), when the file has a syntax error, or when unsaved
edits touch the lines the rewrite replaces.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import logging
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernelevo_server.analyzer import TargetInfo, child_pythonpath
from kernelevo_server.plan_worker import Plan, PlanApply, PlanRequest
from kernelevo_server.present import offers_kernel, result_title
from kernelevo_server.rebase import LineEdit, RebaseConflict, apply_edits, rebase
from kernelevo_server.rpc_faults import KernelEvoError
from pygls.uris import from_fs_path

from kernelevo.store import ResultSummary
from kernelevo.targets.apply_facts import ApplyFacts, task_source_at
from kernelevo.worker import protocol

if TYPE_CHECKING:
    from kernelevo_server.app import KernelEvoServer

logger = logging.getLogger(__name__)

PLAN_COMMAND = [sys.executable, "-m", "kernelevo_server.plan_worker"]
PLAN_TIMEOUT_S = 120.0


@dataclass
class FileChange:
    uri: str
    path: str
    exists: bool  # on disk or open in the editor
    version: int | None  # the open document's version the edits were built against
    current: str
    new_text: str
    edits: list[LineEdit]


@dataclass
class Proposal:
    uri: str
    target: TargetInfo
    result: ResultSummary
    files: list[FileChange]
    diff: str

    @property
    def title(self) -> str:
        return f"Apply KernelEvo kernel to {self.target.name}: {result_title(self.result)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.result.run_id,
            "targetId": self.target.id,
            "title": self.title,
            "files": [
                {"uri": f.uri, "oldText": f.current, "newText": f.new_text} for f in self.files
            ],
        }


async def find_target(server: KernelEvoServer, uri: str, target_id: str) -> TargetInfo:
    st = await server.analysis.fresh(uri)
    if st is None:
        raise KernelEvoError(f"cannot read {uri}")
    if (
        st.degraded or st.errors
    ):  # the file does not parse: the search and the rewrite both need it to
        raise KernelEvoError(
            f"{os.path.basename(st.path)} has an error ({'; '.join(st.errors)[:200]}); fix it first"
        )
    for t in st.targets:
        if t.id == target_id:
            return t
    raise KernelEvoError(
        f"no target '{target_id}' in {os.path.basename(st.path)} (renamed or removed?)"
    )


async def find_result(
    server: KernelEvoServer, path: str, target_id: str, run_id: str | None
) -> ResultSummary:
    results = await server.results.for_file(path)
    r = results.get(target_id)
    if run_id and (r is None or r.run_id != run_id):
        r = await server.results.result_for_run(run_id)
        if r is not None and r.target_id != target_id:
            r = None
    if r is None:
        raise KernelEvoError(
            f"no KernelEvo result for '{target_id}'" + (f" in run {run_id}" if run_id else "")
        )
    if not offers_kernel(r):
        raise KernelEvoError(
            f"run {r.run_id} has no kernel to apply to '{target_id}': {r.run_outcome().headline()}"
        )
    if not os.path.exists(r.candidate_path):
        raise KernelEvoError(f"the kernel of run {r.run_id} is missing: {r.candidate_path}")
    return r


async def searched_hash(server: KernelEvoServer, r: ResultSummary) -> str:
    """The target's source hash when its search started, as the search recorded it in its run."""
    run = await server.results.run(r.run_id)
    return run.source_hash if run is not None and run.source_hash else ""


async def apply_facts(server: KernelEvoServer, r: ResultSummary, started_hash: str) -> ApplyFacts:
    """What `apply_candidate` needs to know about the run (kernelevo/targets/apply_facts.py): the
    run's summary (inputs, dtypes, devices, init args), its task's source, and the result."""
    run = await server.results.run(r.run_id)
    summary = run.summary if run is not None and isinstance(run.summary, dict) else {}
    task_source = task_source_at(run.task_path if run is not None else None)
    facts = ApplyFacts.of_run(
        summary,
        run_id=r.run_id,
        verified=r.verified,
        source_hash=started_hash,
        task_source=str(summary.get("task_source") or task_source),
    )
    date = time.strftime("%Y-%m-%d", time.localtime(r.created_at)) if r.created_at else ""
    return dataclasses.replace(
        facts,
        backend=r.backend or facts.backend,
        gpu=facts.gpu or r.gpu,
        date=facts.date or date,
        speedup_eager=r.speedup_eager if facts.speedup_eager is None else facts.speedup_eager,
        speedup_compile=r.speedup_compile
        if facts.speedup_compile is None
        else facts.speedup_compile,
    )


async def check_not_stale(server: KernelEvoServer, target: TargetInfo, r: ResultSummary) -> None:
    expected = await searched_hash(server, r)
    if not expected:
        raise KernelEvoError(
            f"run {r.run_id} did not record the text of '{target.name}', so KernelEvo cannot "
            "tell whether it changed since; optimize it again"
        )
    if expected != target.source_hash:
        raise KernelEvoError(
            f"'{target.name}' changed since the search of run {r.run_id} started; "
            "undo the change or optimize it again"
        )


async def run_plan(request: PlanApply) -> Plan:
    reply = await run_plan_worker(request)
    if "error" in reply:
        if reply.get("traceback"):
            logger.warning("apply planning failed:\n%s", reply["traceback"])
        raise KernelEvoError(f"cannot plan the rewrite: {reply['error']}")
    try:
        plan = Plan.from_wire(reply)
    except (TypeError, ValueError) as exc:
        raise KernelEvoError(
            f"cannot plan the rewrite: the planner's answer is malformed ({exc})"
        ) from None
    if not plan.files:
        raise KernelEvoError("cannot plan the rewrite: the plan is empty")
    return plan


async def run_plan_worker(request: PlanRequest) -> dict[str, Any]:
    """One request to a fresh plan worker (it may import torch; the server must not)."""
    proc = await asyncio.create_subprocess_exec(
        *PLAN_COMMAND,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=child_pythonpath()),
    )
    try:
        out, err = await asyncio.wait_for(
            proc.communicate(protocol.encode(request.wire())), PLAN_TIMEOUT_S
        )
    except (asyncio.TimeoutError, asyncio.CancelledError):
        proc.kill()
        await proc.wait()
        raise
    try:
        reply = protocol.read(io.BytesIO(out))
    except (protocol.ProtocolError, ValueError):
        reply = None
    if not isinstance(reply, dict):
        return {"error": f"the worker failed: {err.decode(errors='replace')[-500:]}"}
    return reply


def _current(server: KernelEvoServer, path: str) -> tuple[bool, int | None, str]:
    uri = from_fs_path(path) or path
    got = server.open_document(uri)
    if got is not None:
        return True, got.version, got.source
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            return True, None, fh.read()
    return False, None, ""


async def build_proposal(
    server: KernelEvoServer, uri: str, target_id: str, run_id: str | None = None
) -> Proposal:
    target = await find_target(server, uri, target_id)
    path = server.path_of(uri)
    r = await find_result(server, path, target_id, run_id)
    await check_not_stale(server, target, r)
    facts = await apply_facts(server, r, target.source_hash)
    plan = await run_plan(PlanApply(path, target_id, r.candidate_path, facts.wire()))
    # The analysis may have moved on while planning: check again against the text we rebase onto.
    target = await find_target(server, uri, target_id)
    await check_not_stale(server, target, r)
    files: list[FileChange] = []
    for f in plan.files:
        fpath = os.path.abspath(f.path)
        exists, version, current = _current(server, fpath)
        old = f.old_text if exists or f.old_text else ""
        if not exists:
            edits = [LineEdit(0, 0, f.new_text)] if f.new_text else []
        elif not old and current:
            # The plan creates a file that already exists: replace it whole (the edit is previewed).
            n = len(current.splitlines(keepends=True))
            edits = [] if current == f.new_text else [LineEdit(0, n, f.new_text)]
        else:
            try:
                edits = rebase(old, f.new_text, current)
            except RebaseConflict as exc:
                raise KernelEvoError(
                    f"{os.path.basename(fpath)}: {exc}; save or undo your edits and try again"
                ) from exc
        files.append(
            FileChange(
                uri=from_fs_path(fpath) or fpath,
                path=fpath,
                exists=exists,
                version=version,
                current=current,
                new_text=apply_edits(current, edits),
                edits=edits,
            )
        )
    return Proposal(uri=uri, target=target, result=r, files=files, diff=plan.diff)
