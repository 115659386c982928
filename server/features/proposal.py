"""Showing and applying a verified kernel: the `kernelevo/proposal` request (for a
client's diff view), and the `kernelevo.showDiff` / `kernelevo.apply` / `kernelevo.applied`
commands.

`kernelevo.showDiff` is intercepted by the VS Code client; other editors get the unified
diff written under the store's folder, opened with `window/showDocument` where the client
has it and otherwise named in a message (and returned), so they can read it before applying.
`kernelevo.apply` is Apply in one request, for every client (VS Code's Apply button and lens,
Neovim's command): it asks (`window/showMessageRequest`) before writing in a client that cannot
preview edits, then sends the same `WorkspaceEdit` as the code action through
`workspace/applyEdit` and answers whether it landed.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

from kernelevo_server import workspace_edit
from kernelevo_server.app import KernelEvoServer, uri_of
from kernelevo_server.features.actions import can_preview_edits
from kernelevo_server.params import as_dict
from kernelevo_server.planned_edit import KernelEvoError, Proposal, build_proposal
from lsprotocol import types


def unified_diff(p: Proposal) -> str:
    chunks = []
    for f in p.files:
        name = os.path.relpath(f.path, os.path.dirname(p.files[0].path))
        chunks.append(
            "".join(
                difflib.unified_diff(
                    f.current.splitlines(keepends=True),
                    f.new_text.splitlines(keepends=True),
                    fromfile=f"a/{name}" if f.exists else "/dev/null",
                    tofile=f"b/{name}",
                )
            )
        )
    return "".join(chunks)


async def _proposal(ls: KernelEvoServer, uri: Any, target_id: Any, run_id: Any) -> Proposal:
    if not (
        isinstance(uri, str)
        and uri
        and isinstance(target_id, str)
        and target_id
        and (run_id is None or isinstance(run_id, str))
    ):
        raise KernelEvoError("expected uri, targetId and runId (optional) as strings")
    try:
        return await build_proposal(ls, str(uri), str(target_id), str(run_id) if run_id else None)
    except KernelEvoError as exc:
        ls.show(exc.message, types.MessageType.Error)
        raise


def register(server: KernelEvoServer) -> None:
    @server.feature("kernelevo/proposal")
    async def proposal(ls: KernelEvoServer, params: Any) -> dict[str, Any]:
        p = as_dict(params)
        return (await _proposal(ls, p.get("uri"), p.get("targetId"), p.get("runId"))).to_json()

    @server.command("kernelevo.showDiff")
    async def show_diff(ls: KernelEvoServer, *args: Any) -> dict[str, Any]:
        uri, target_id, run_id = (list(args) + [None] * 3)[:3]
        prop = await _proposal(ls, uri, target_id, run_id)
        out = prop.to_json()
        diff_path = write_diff(ls, prop)
        out.update(diffUri=uri_of(diff_path), diff=unified_diff(prop))
        if ls.supports("window.show_document.support"):
            await ls.window_show_document_async(
                types.ShowDocumentParams(uri=uri_of(diff_path), take_focus=True)
            )
        else:
            ls.show(
                f"the proposed change to {prop.target.name} ({prop.title.split(': ', 1)[-1]}) is in {diff_path}; "
                "read it, then Apply"
            )
        return out

    @server.command("kernelevo.apply")
    async def apply(ls: KernelEvoServer, *args: Any) -> dict[str, Any]:
        uri, target_id, run_id = (list(args) + [None] * 3)[:3]
        prop = await _proposal(ls, uri, target_id, run_id)
        if not can_preview_edits(ls):
            diff_path = write_diff(ls, prop)
            answer = await ls.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Info,
                    message=f"KernelEvo: {prop.title}? The diff is in {diff_path}.",
                    actions=[
                        types.MessageActionItem(title="Apply"),
                        types.MessageActionItem(title="Cancel"),
                    ],
                )
            )
            if getattr(answer, "title", None) != "Apply":
                return {"applied": False, "runId": prop.result.run_id, "reason": "not confirmed"}
        edit = workspace_edit.build(prop, ls.client_capabilities, ls.position_encoding)
        ls.applications.remember(prop)
        result = await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=edit, label=prop.title)
        )
        applied = bool(getattr(result, "applied", False))
        if applied:
            ls.applications.landed(str(uri), str(target_id), prop.result.run_id)
            ls.refresh_lenses()
            return {"applied": True, "runId": prop.result.run_id}
        reason = getattr(result, "failure_reason", None) or "the editor declined the edit"
        ls.show(f"the edit was not applied: {reason}", types.MessageType.Warning)
        return {"applied": False, "runId": prop.result.run_id, "reason": reason}

    @server.command("kernelevo.applied")
    def applied(ls: KernelEvoServer, *args: Any) -> dict[str, bool]:
        """Run by the client right after it applied the apply code action's edit: the lenses then
        read the applied state from the rewritten text at once."""
        uri, target_id, run_id = (list(args) + [None] * 3)[:3]
        if not (isinstance(uri, str) and isinstance(target_id, str) and isinstance(run_id, str)):
            raise KernelEvoError("kernelevo.applied needs [uri, targetId, runId]")
        ls.applications.landed(uri, target_id, run_id)
        ls.refresh_lenses()
        return {"recorded": True}


def write_diff(ls: KernelEvoServer, prop: Proposal) -> Path:
    """The unified diff as a file under the store's folder, for editors without a diff view."""
    folder = ls.results.store_path.parent / "diffs"
    folder.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{prop.target.name}-{prop.result.run_id}")
    diff_path = folder / f"{safe}.diff"
    diff_path.write_text(unified_diff(prop), encoding="utf-8")
    return diff_path
