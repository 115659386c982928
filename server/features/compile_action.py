"""A code action for when torch.compile is the answer: it beats the user's eager code clearly
and no kernel we found beats it. The action wraps the target with `@torch.compile` (the
forward of a module, else the function) and says what that costs: its first call compiles.

Offered from actions.py's code-action handler (one LSP method has one handler); the measured
times come from the target's stored result, so nothing here runs or imports torch.
"""

from __future__ import annotations

import re

from kernelevo_server.analyzer import TargetInfo
from lsprotocol import types

from kernelevo.store import ResultSummary
from kernelevo.targets.compile_advice import compile_advice

COMPILE_KIND = "refactor.rewrite.kernelevo.torchCompile"


def compile_actions(ls, uri: str, t: TargetInfo, r: ResultSummary | None) -> list[types.CodeAction]:  # type: ignore[no-untyped-def]
    """The torch.compile action for target `t`, when its result says torch.compile is the win."""
    if r is None or not r.verified or t.kind not in ("module", "function"):
        return []
    advice = compile_advice(
        {"eager_ms": r.reference_ms, "compile_ms": r.compile_ms, "candidate_ms": r.best_ms},
        r.status,
    )
    if advice is None:
        return []
    try:
        lines = ls.workspace.get_text_document(uri).source.splitlines(keepends=True)
    except Exception:  # the document is gone: nothing to offer
        return []
    name = "forward" if t.kind == "module" else t.name
    at = _def_line(lines, t, name)
    if at is None or any("torch.compile" in line for line in lines[max(0, at - 3) : at]):
        return []
    indent = re.match(r"\s*", lines[at]).group(0)  # type: ignore[union-attr]
    while at > 0 and lines[at - 1].strip().startswith("@"):
        at -= 1  # outermost, above the existing decorators
    edits = [
        types.TextEdit(
            range=types.Range(
                start=types.Position(line=at, character=0), end=types.Position(line=at, character=0)
            ),
            new_text=f"{indent}@torch.compile  # KernelEvo: {advice.sentence()}\n",
        )
    ]
    if not any(re.match(r"\s*import torch\b", line) for line in lines):
        top = _after_imports(lines)
        edits.insert(
            0,
            types.TextEdit(
                range=types.Range(
                    start=types.Position(line=top, character=0),
                    end=types.Position(line=top, character=0),
                ),
                new_text="import torch\n",
            ),
        )
    what = f"{t.name}.forward" if t.kind == "module" else t.name
    title = (
        f"Wrap {what} with torch.compile: {advice.compile_over_eager:.1f}x faster than your code here "
        f"(first call compiles{f', about {advice.warmup_s:.0f} s' if advice.warmup_s else ''})"
    )
    return [
        types.CodeAction(
            title=title, kind=COMPILE_KIND, edit=types.WorkspaceEdit(changes={uri: edits})
        )
    ]


def _def_line(lines: list[str], t: TargetInfo, name: str) -> int | None:
    pattern = re.compile(rf"\s*(async\s+)?def\s+{re.escape(name)}\s*\(")
    for i in range(t.start_line, min(t.end_line + 1, len(lines))):
        if pattern.match(lines[i]):
            return i
    return None


def _after_imports(lines: list[str]) -> int:
    last = -1
    for i, line in enumerate(lines):
        if re.match(r"(import|from)\s+\S+", line):
            last = i
    return last + 1
