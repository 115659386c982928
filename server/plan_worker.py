"""Plan an Apply in a child process (`PlanApply`: `kernelevo.targets.apply.apply_candidate(...,
dry_run=True)`), or guess a target's example inputs for the editor to ask about (`GuessInputs`).

Run apart from the server so that planning, whatever it imports, never loads torch into
the server and never blocks its event loop. Reads one request frame on stdin and writes one
reply frame on stdout, in the engine's framing (kernelevo/worker/protocol.py). It writes no
files (dry run).
"""

from __future__ import annotations

import dataclasses
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any

from kernelevo.targets.edits import FileEdit
from kernelevo.worker import protocol
from kernelevo.worker.protocol import Request, RequestError, RequestKinds


@dataclass(frozen=True)
class PlanRequest(Request):
    user_file: str
    target_id: str


PLAN: RequestKinds[PlanRequest] = RequestKinds()


@PLAN.kind("plan_apply")
@dataclass(frozen=True)
class PlanApply(PlanRequest):
    """The edit that applies a run's kernel to the file: answered with `files` and `diff`.
    `facts`: the run's ApplyFacts (kernelevo/targets/apply_facts.py) as its wire map."""

    candidate_path: str
    facts: dict[str, Any] = field(default_factory=dict)


@PLAN.kind("guess_inputs")
@dataclass(frozen=True)
class GuessInputs(PlanRequest):
    """The best guess at the target's example inputs in `text` (the editor's buffer)."""

    text: str


@dataclass(frozen=True)
class Plan:
    """A `PlanApply`'s answer: each file's text before and after the Apply (the planner's own
    `FileEdit` records), and the diff shown."""

    files: list[FileEdit]
    diff: str = ""

    @classmethod
    def from_wire(cls, message: dict[str, Any]) -> Plan:
        """The record back from its frame; TypeError or ValueError for one that is not a plan."""
        files = message.get("files")
        if not isinstance(files, list):
            raise ValueError("no file list")
        return cls([FileEdit(**f) for f in files], str(message.get("diff") or ""))


def plan(request: PlanApply) -> dict[str, Any]:
    from kernelevo.targets.apply import apply_candidate
    from kernelevo.targets.apply_facts import ApplyFacts

    facts = ApplyFacts.parse(request.facts)  # ProtocolError: answered as the planner's error
    result = apply_candidate(
        request.user_file, request.target_id, request.candidate_path, facts, dry_run=True
    )
    return dataclasses.asdict(Plan(result.files, result.diff))


def guess(request: GuessInputs) -> dict[str, Any]:
    """The best guess at a target's example inputs (`kernelevo.targets.inputs.guess_inputs`)."""
    from kernelevo.targets.detect import analyze_source
    from kernelevo.targets.inputs import guess_inputs
    from kernelevo.targets.reference_call import resolve_reference

    a = analyze_source(request.text, request.user_file)
    target = next((t for t in a.targets if t.id == request.target_id), None)
    if target is None:
        raise LookupError(f"no target {request.target_id} in {request.user_file}")
    g = guess_inputs(a, resolve_reference(a, target))
    line = a.lines[g.line - 1]
    return {**dataclasses.asdict(g), "indent": line[: len(line) - len(line.lstrip())]}


def answer(frame: dict[str, Any] | None) -> dict[str, Any]:
    """The reply to one frame: the plan or the guess, or `error` (and `traceback` for a failure
    of the planner itself, which the server logs)."""
    try:
        request = PLAN.parse(frame or {})
    except RequestError as exc:
        return {"error": f"not a plan request: {exc}"}
    try:
        if isinstance(request, GuessInputs):
            return guess(request)
        assert isinstance(request, PlanApply)
        return plan(request)
    except Exception as exc:
        return {"error": str(exc) or type(exc).__name__, "traceback": traceback.format_exc()}


def main() -> int:
    try:
        frame = protocol.read(sys.stdin.buffer)
    except (protocol.ProtocolError, ValueError) as exc:
        reply: dict[str, Any] = {"error": f"not a plan request: {exc}"}
    else:
        reply = answer(frame)
    protocol.write(sys.stdout.buffer, reply)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
