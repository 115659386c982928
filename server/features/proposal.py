"""Showing and applying a verified kernel: the `kernelevo/proposal` request (for a
client's diff view), and the `kernelevo.showDiff` / `kernelevo.apply` commands.

`kernelevo.showDiff` is intercepted by the VS Code client; other editors get the
unified diff written under the store's folder and opened with `window/showDocument`.
`kernelevo.apply` sends the same confirmable `WorkspaceEdit` as the code action.
"""
from __future__ import annotations

import difflib
import os
import re
from typing import Any

from lsprotocol import types

from server import workspace_edit
from server.app import KernelEvoServer, uri_of
from server.params import as_dict
from server.proposals import KernelEvoError, Proposal, build_proposal


def unified_diff(p: Proposal) -> str:
    chunks = []
    for f in p.files:
        name = os.path.relpath(f.path, os.path.dirname(p.files[0].path))
        chunks.append("".join(difflib.unified_diff(
            f.current.splitlines(keepends=True), f.new_text.splitlines(keepends=True),
            fromfile=f"a/{name}" if f.exists else "/dev/null", tofile=f"b/{name}")))
    return "".join(chunks)


async def _proposal(ls: KernelEvoServer, uri: Any, target_id: Any, run_id: Any) -> Proposal:
    if not uri or not target_id:
        raise KernelEvoError("expected [uri, targetId, runId?]")
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
        if ls.supports("window.show_document.support"):
            folder = ls.results.store_path.parent / "diffs"
            folder.mkdir(parents=True, exist_ok=True)
            safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{prop.target.name}-{prop.result.run_id}")
            diff_path = folder / f"{safe}.diff"
            diff_path.write_text(unified_diff(prop), encoding="utf-8")
            await ls.window_show_document_async(types.ShowDocumentParams(uri=uri_of(diff_path), take_focus=True))
            out["diffUri"] = uri_of(diff_path)
        return out

    @server.command("kernelevo.apply")
    async def apply(ls: KernelEvoServer, *args: Any) -> dict[str, Any]:
        uri, target_id, run_id = (list(args) + [None] * 3)[:3]
        prop = await _proposal(ls, uri, target_id, run_id)
        edit = workspace_edit.build(prop, ls.client_capabilities, ls.position_encoding)
        result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=prop.title))
        applied = bool(getattr(result, "applied", False))
        if not applied:
            reason = getattr(result, "failure_reason", None)
            ls.show(f"the edit was not applied{': ' + reason if reason else ''}", types.MessageType.Warning)
        return {"applied": applied, "runId": prop.result.run_id}
