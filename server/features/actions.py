"""Code actions on a target: optimize it (a command), and apply its verified kernel.

The apply action's edit is resolved lazily (`codeAction/resolve`): planning it starts a
process, which a light-bulb request must not wait for. Clients that cannot resolve get
the edit computed up front. A stale result (the target changed since its search) shows
as a disabled action with the reason, where the client supports that.
"""

from __future__ import annotations

import logging
from typing import Any

from kernelevo_server import workspace_edit
from kernelevo_server.analyzer import TargetInfo
from kernelevo_server.app import KernelEvoServer
from kernelevo_server.applied import applied_run
from kernelevo_server.features.compile_action import COMPILE_KIND, compile_actions
from kernelevo_server.features.inputs import INPUTS_KIND, inputs_actions
from kernelevo_server.features.precision import PRECISION_KIND, precision_actions
from kernelevo_server.params import as_dict
from kernelevo_server.planned_edit import KernelEvoError, build_proposal, searched_hash
from kernelevo_server.present import offers_kernel, result_title
from lsprotocol import types

from kernelevo.store import ResultSummary

logger = logging.getLogger(__name__)

APPLY_KIND = "refactor.rewrite.kernelevo.apply"
OPTIMIZE_KIND = "source.kernelevo.optimize"


def _wanted(kind: str, only: Any) -> bool:
    if not only:
        return True
    return any(kind == k or kind.startswith(f"{k}.") or k == "" for k in only)


def register(server: KernelEvoServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[
                APPLY_KIND,
                OPTIMIZE_KIND,
                COMPILE_KIND,
                INPUTS_KIND,
                PRECISION_KIND,
            ],
            resolve_provider=True,
        ),
    )
    async def code_action(
        ls: KernelEvoServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        t = await ls.target_at(uri, params.range.start.line)
        if t is None:
            return None
        only = params.context.only
        actions: list[types.CodeAction] = []
        if _wanted(OPTIMIZE_KIND, only):
            title = f"Optimize {t.name} with KernelEvo"
            actions.append(
                types.CodeAction(
                    title=title,
                    kind=OPTIMIZE_KIND,
                    command=types.Command(
                        title=title,
                        command="kernelevo.optimize",
                        arguments=[uri, t.id, ls.settings.backend],
                    ),
                )
            )
        if _wanted(INPUTS_KIND, only):
            actions += inputs_actions(ls, uri, t)
        r = (await ls.results.for_file(ls.path_of(uri))).get(t.id)
        if _wanted(PRECISION_KIND, only):
            actions += precision_actions(uri, t, r)
        if _wanted(COMPILE_KIND, only) and not t.edited:
            actions += compile_actions(ls, uri, t, r)
        if (
            offers_kernel(r)
            and _wanted(APPLY_KIND, only)
            and applied_run(ls, ls.path_of(uri), t) is None
        ):
            assert r is not None
            action = await _apply_action(ls, uri, t, r)
            if action is not None:
                actions.append(action)
        return actions

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def resolve(ls: KernelEvoServer, action: types.CodeAction) -> types.CodeAction:
        data = as_dict(action.data)
        if action.kind != APPLY_KIND or not data.get("uri"):
            return action
        try:
            proposal = await build_proposal(ls, data["uri"], data["targetId"], data.get("runId"))
        except KernelEvoError as exc:
            ls.show(exc.message, types.MessageType.Error)
            raise
        action.edit = workspace_edit.build(proposal, ls.client_capabilities, ls.position_encoding)
        ls.applications.remember(proposal)
        return action


async def _apply_action(
    ls: KernelEvoServer, uri: str, t: TargetInfo, r: ResultSummary
) -> types.CodeAction | None:
    """Apply as the client can take it: an edit resolved later (VS Code runs `kernelevo.applied`
    after applying it), or, for a client that writes edits unseen, a command that asks first."""
    args = [uri, t.id, r.run_id]
    if can_preview_edits(ls):
        action = types.CodeAction(
            title=f"Apply KernelEvo kernel: {result_title(r)}",
            kind=APPLY_KIND,
            data={"uri": uri, "targetId": t.id, "runId": r.run_id},
            command=types.Command(title="applied", command="kernelevo.applied", arguments=args),
        )
    else:
        title = f"Apply KernelEvo kernel: {result_title(r)} (asks before writing)"
        action = types.CodeAction(
            title=title,
            kind=APPLY_KIND,
            command=types.Command(title=title, command="kernelevo.apply", arguments=args),
        )
    if not t.edited:
        expected = await searched_hash(ls, r)
        if expected and expected != t.source_hash:
            if not ls.supports("text_document.code_action.disabled_support"):
                return None
            action.disabled = types.CodeActionDisabled(
                reason=f"{t.name} changed since the search started"
            )
            return action
    if action.data is not None and not _can_resolve(ls):
        try:
            proposal = await build_proposal(ls, uri, t.id, r.run_id)
        except KernelEvoError as exc:
            logger.info("apply action unavailable: %s", exc.message)
            return None
        action.edit = workspace_edit.build(proposal, ls.client_capabilities, ls.position_encoding)
        ls.applications.remember(proposal)
    return action


def can_preview_edits(ls: KernelEvoServer) -> bool:
    """Clients with change annotations (VS Code) show an edit before it lands; others (Neovim 0.7)
    write it at once, so the server asks them first."""
    we = getattr(getattr(ls.client_capabilities, "workspace", None), "workspace_edit", None)
    return bool(getattr(we, "change_annotation_support", None))


def _can_resolve(ls: KernelEvoServer) -> bool:
    caps = ls.client_capabilities
    props = (
        getattr(
            getattr(
                getattr(getattr(caps, "text_document", None), "code_action", None),
                "resolve_support",
                None,
            ),
            "properties",
            None,
        )
        or []
    )
    return "edit" in props
