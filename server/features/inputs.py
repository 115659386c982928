"""Example inputs asked of the user, when the engine found none for a target.

After a search could not start for lack of example inputs, the engine's best guess (from the
target's signature, `kernelevo.targets.inputs.guess_inputs`) and the reason are offered:
`kernelevo.exampleInputs` hands them to a client that asks in an input box (VS Code), and
`kernelevo.recordInputs` writes the answer where the engine reads inputs, as
`# kernelevo: inputs = ...` comments just above the target (the task header then names that
line). Clients without an input box (Neovim 0.7) get a code action that records the guess
itself, for the user to correct in the file.
"""

from __future__ import annotations

import ast
import os
from typing import Any

from kernelevo_server.app import KernelEvoServer
from kernelevo_server.plan_worker import GuessInputs
from kernelevo_server.planned_edit import KernelEvoError, find_target, run_plan_worker
from lsprotocol import types

INPUTS_KIND = "quickfix.kernelevo.inputs"
NO_INPUTS = "no example inputs for"


def missing_inputs_reason(ls: KernelEvoServer, path: str, target_id: str) -> str | None:
    """Why the target's last search could not start, when that was for lack of example inputs."""
    real = os.path.realpath(path)
    for job in reversed(ls.jobs.list()):
        if os.path.realpath(job.spec.path) == real and job.spec.target_id == target_id:
            if NO_INPUTS not in job.message:
                return None
            tried = job.message.split("Tried without edits: ", 1)
            return tried[1] if len(tried) == 2 else job.message
    return None


async def best_guess(ls: KernelEvoServer, uri: str, target_id: str) -> dict[str, Any]:
    target = await find_target(ls, uri, target_id)
    got = ls._text_of(uri)
    if got is None:
        raise KernelEvoError(f"cannot read {uri}")
    reply = await run_plan_worker(GuessInputs(got[2], target_id, got[0]))
    if "error" in reply:
        raise KernelEvoError(f"cannot guess inputs for {target.name}: {reply['error']}")
    reason = missing_inputs_reason(ls, got[2], target_id) or "no example inputs were found"
    return {**reply, "targetName": target.name, "reason": reason}


def _expression(text: Any, what: str) -> str:
    if not isinstance(text, str) or not text.strip() or "\n" in text:
        raise KernelEvoError(f"{what}: give one line of Python, e.g. (torch.randn(8, 1024),)")
    try:
        ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise KernelEvoError(f"{what} is not a Python expression: {exc.msg}") from None
    return text.strip()


def comment_edit(uri: str, place: dict[str, Any], comments: list[str]) -> types.WorkspaceEdit:
    """Insert `comments` just above the target (its decorators), at its indentation: where the
    engine reads `# kernelevo:` comments. `place` is a guess_inputs reply (line, indent)."""
    indent = str(place.get("indent") or "")
    lines = [f"{indent}{c}" for c in comments]
    at = types.Position(line=int(place["line"]) - 1, character=0)
    return types.WorkspaceEdit(
        changes={
            uri: [
                types.TextEdit(
                    range=types.Range(start=at, end=at), new_text="\n".join(lines) + "\n"
                )
            ]
        }
    )


def inputs_actions(ls: KernelEvoServer, uri: str, target: Any) -> list[types.CodeAction]:
    if missing_inputs_reason(ls, ls.path_of(uri), target.id) is None:
        return []
    title = f"Record example inputs for {target.name} (a `# kernelevo: inputs` comment to correct)"
    return [
        types.CodeAction(
            title=title,
            kind=INPUTS_KIND,
            command=types.Command(
                title=title, command="kernelevo.recordInputs", arguments=[uri, target.id]
            ),
        )
    ]


def register(server: KernelEvoServer) -> None:
    @server.command("kernelevo.exampleInputs")
    async def example_inputs(ls: KernelEvoServer, *args: Any) -> dict[str, Any]:
        uri, target_id = ([*args, None, None])[:2]
        if not (isinstance(uri, str) and isinstance(target_id, str)):
            raise KernelEvoError("kernelevo.exampleInputs needs [uri, targetId]")
        return await best_guess(ls, uri, target_id)

    @server.command("kernelevo.recordInputs")
    async def record_inputs(ls: KernelEvoServer, *args: Any) -> dict[str, Any]:
        """[uri, targetId, inputs?, init?]: without inputs, the best guess is recorded."""
        uri, target_id, inputs, init = ([*args, None, None, None, None])[:4]
        if not (isinstance(uri, str) and isinstance(target_id, str)):
            raise KernelEvoError("kernelevo.recordInputs needs [uri, targetId, inputs?, init?]")
        guess = await best_guess(ls, uri, target_id)
        try:
            inputs = _expression(guess["inputs"] if inputs is None else inputs, "the inputs")
            if init is None:
                init = guess.get("init")
            init = None if init is None else _expression(init, "the constructor's arguments")
        except KernelEvoError as exc:
            ls.show(exc.message, types.MessageType.Error)
            raise
        result = await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(
                edit=comment_edit(
                    uri,
                    guess,
                    [f"# kernelevo: inputs = {inputs}"]
                    + ([f"# kernelevo: init = {init}"] if init is not None else []),
                ),
                label=f"KernelEvo: example inputs for {guess['targetName']}",
            )
        )
        applied = bool(getattr(result, "applied", False))
        if applied:
            ls.show(
                f"example inputs for {guess['targetName']} recorded above it "
                f"(# kernelevo: inputs = {inputs}); the next search of the saved file uses them"
            )
        return {"applied": applied, "inputs": inputs, "init": init}
