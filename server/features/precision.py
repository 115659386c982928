"""Lower precision as the user's choice: a run whose candidate failed the fp32 bounds but met a
looser level's (TF32, bf16) is offered "Accept TF32" (a lens, a code action, a hover link).

`kernelevo.acceptPrecision` writes `# kernelevo: precision = tf32` above the target, which the
engine turns into ALLOW_TF32 on the target's task (kernelevo/targets/inputs.py): the next search
verifies at that level and times eager and torch.compile with it too. The VS Code client saves
the file and starts that search at once; other clients are told to save and optimize.
"""

from __future__ import annotations

from typing import Any

from kernelevo_server.app import KernelEvoServer
from kernelevo_server.features.inputs import best_guess, comment_edit
from kernelevo_server.planned_edit import KernelEvoError
from lsprotocol import types

from kernelevo.store import ResultSummary

PRECISION_KIND = "quickfix.kernelevo.precision"
LEVEL_NAMES = {"tf32": "TF32", "bf16": "bf16"}


def offer_title(r: ResultSummary | None) -> str | None:
    """E.g. "Accept TF32 (a kernel passes at rel. error 6.5e-04) and optimize again"."""
    offer = (r.precision_offer if r else None) or {}
    level = offer.get("level")
    if level not in LEVEL_NAMES:
        return None
    rel = offer.get("rel_l2")
    at = f" (a kernel passes at rel. error {rel:.2g})" if isinstance(rel, float | int) else ""
    return f"Accept {LEVEL_NAMES[level]}{at} and optimize again"


def offer_markdown(target_name: str, r: ResultSummary) -> str | None:
    title = offer_title(r)
    if title is None:
        return None
    level = r.precision_offer["level"]
    name = LEVEL_NAMES[level]
    return (
        f"A kernel fails the fp32 bounds but passes at {name} tolerance: "
        f"{r.precision_offer.get('message', '')}. Accepting {name} for `{target_name}` verifies "
        f"it at that level and times eager PyTorch and torch.compile with {name} too."
    )


def precision_actions(uri: str, target: Any, r: ResultSummary | None) -> list[types.CodeAction]:
    title = offer_title(r)
    if title is None:
        return []
    assert r is not None
    args = [uri, target.id, r.precision_offer["level"]]
    return [
        types.CodeAction(
            title=f"{title} ({target.name})",
            kind=PRECISION_KIND,
            command=types.Command(title=title, command="kernelevo.acceptPrecision", arguments=args),
        )
    ]


def register(server: KernelEvoServer) -> None:
    @server.command("kernelevo.acceptPrecision")
    async def accept_precision(ls: KernelEvoServer, *args: Any) -> dict[str, Any]:
        uri, target_id, level = ([*args, None, None, None])[:3]
        if not (isinstance(uri, str) and isinstance(target_id, str) and level in LEVEL_NAMES):
            raise KernelEvoError(
                "kernelevo.acceptPrecision needs [uri, targetId, level] with level tf32 or bf16"
            )
        place = await best_guess(ls, uri, target_id)
        name = LEVEL_NAMES[level]
        result = await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(
                edit=comment_edit(uri, place, [f"# kernelevo: precision = {level}"]),
                label=f"KernelEvo: accept {name} for {place['targetName']}",
            )
        )
        applied = bool(getattr(result, "applied", False))
        if applied:
            ls.show(
                f"{name} accepted for {place['targetName']} (# kernelevo: precision = {level} "
                "above it); the next search of the saved file verifies and times it at that level"
            )
        return {"applied": applied, "level": level}
