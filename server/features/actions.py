"""Code actions on a target: optimize it (a command), and apply its verified kernel.

The apply action's edit is resolved lazily (`codeAction/resolve`): planning it starts a
process, which a light-bulb request must not wait for. Clients that cannot resolve get
the edit computed up front. A stale result (the target changed since its search) shows
as a disabled action with the reason, where the client supports that.
"""
from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types

from server import workspace_edit
from server.app import KernelEvoServer
from server.features.compile_action import COMPILE_KIND, compile_actions
from server.params import as_dict
from server.present import is_improvement, result_title
from server.proposals import KernelEvoError, build_proposal, searched_hash

logger = logging.getLogger(__name__)

APPLY_KIND = "refactor.rewrite.kernelevo.apply"
OPTIMIZE_KIND = "source.kernelevo.optimize"


def _wanted(kind: str, only: Any) -> bool:
    if not only:
        return True
    return any(kind == k or kind.startswith(f"{k}.") or k == "" for k in only)


def register(server: KernelEvoServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[APPLY_KIND, OPTIMIZE_KIND, COMPILE_KIND], resolve_provider=True))
    async def code_action(ls: KernelEvoServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        t = await ls.target_at(uri, params.range.start.line)
        if t is None:
            return None
        only = params.context.only
        actions: list[types.CodeAction] = []
        if _wanted(OPTIMIZE_KIND, only):
            title = f"Optimize {t.name} with KernelEvo"
            actions.append(types.CodeAction(title=title, kind=OPTIMIZE_KIND, command=types.Command(
                title=title, command="kernelevo.optimize", arguments=[uri, t.id, ls.settings.backend])))
        r = (await ls.results.for_file(ls.path_of(uri))).get(t.id)
        if _wanted(COMPILE_KIND, only) and not t.edited:
            actions += compile_actions(ls, uri, t, r)
        if is_improvement(r) and _wanted(APPLY_KIND, only):
            assert r is not None
            action = types.CodeAction(title=f"Apply KernelEvo kernel: {result_title(r)}", kind=APPLY_KIND,
                                      data={"uri": uri, "targetId": t.id, "runId": r.run_id})
            if not t.edited:
                expected = await searched_hash(ls, r)
                if expected and expected != t.source_hash:
                    reason = f"{t.name} changed since the search started"
                    if ls.supports("text_document.code_action.disabled_support"):
                        action.disabled = types.CodeActionDisabled(reason=reason)
                    else:
                        action = None  # type: ignore[assignment]
            if action is not None and action.disabled is None and not _can_resolve(ls):
                try:
                    proposal = await build_proposal(ls, uri, t.id, r.run_id)
                    action.edit = workspace_edit.build(proposal, ls.client_capabilities, ls.position_encoding)
                except KernelEvoError as exc:
                    logger.info("apply action unavailable: %s", exc.message)
                    action = None  # type: ignore[assignment]
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
        return action


def _can_resolve(ls: KernelEvoServer) -> bool:
    caps = ls.client_capabilities
    props = getattr(getattr(getattr(getattr(caps, "text_document", None), "code_action", None),
                            "resolve_support", None), "properties", None) or []
    return "edit" in props
