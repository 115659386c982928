"""Carry a planned rewrite (planned on the file as saved) onto the text the editor has now.

The plan says old -> new. The editor may hold unsaved edits elsewhere in the file; each
changed hunk of old -> new is moved onto the current text when the lines it touches
are unchanged there, and the rebase fails when they are not (the user edited the very
place the kernel would go). Whole lines only, so no column or encoding arithmetic.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass


class RebaseConflict(Exception):
    """The current text changed where the plan edits."""


@dataclass
class LineEdit:
    start: int  # replace current lines [start, end) ...
    end: int
    text: str  # ... with this text (whole lines, with their line endings)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def plan_edits(old: str, new: str) -> list[tuple[int, int, str]]:
    """Hunks (old_start, old_end, new_text) turning old into new."""
    a, b = _lines(old), _lines(new)
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [
        (i1, i2, "".join(b[j1:j2])) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"
    ]


def rebase(old: str, new: str, current: str) -> list[LineEdit]:
    hunks = plan_edits(old, new)
    if current == old:
        return [LineEdit(i1, i2, t) for i1, i2, t in hunks]
    a, c = _lines(old), _lines(current)
    mapping: dict[int, int] = {}
    for tag, i1, i2, j1, _j2 in difflib.SequenceMatcher(None, a, c, autojunk=False).get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                mapping[i1 + k] = j1 + k
    edits: list[LineEdit] = []
    for i1, i2, text in hunks:
        if i2 > i1:
            mapped = [mapping.get(i) for i in range(i1, i2)]
            start = mapped[0]
            if start is None or mapped != list(range(start, start + len(mapped))):
                raise RebaseConflict(f"lines {i1 + 1}-{i2} changed since the file was saved")
            edits.append(LineEdit(start, start + (i2 - i1), text))
        else:
            # Pure insertion before old line i1: anchor on the line it precedes or follows.
            if i1 in mapping:
                at = mapping[i1]
            elif i1 > 0 and (i1 - 1) in mapping:
                at = mapping[i1 - 1] + 1
            elif i1 == 0:
                at = 0
            else:
                raise RebaseConflict(
                    f"the text around line {i1 + 1} changed since the file was saved"
                )
            edits.append(LineEdit(at, at, text))
    return edits


def apply_edits(current: str, edits: list[LineEdit]) -> str:
    lines = _lines(current)
    for e in sorted(edits, key=lambda e: e.start, reverse=True):
        lines[e.start : e.end] = [e.text] if e.text else []
    return "".join(lines)
