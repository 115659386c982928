"""Getting the candidate file out of a model's answer: a whole file in a fenced block, or
SEARCH/REPLACE edits of the file the model was shown.

Fences are read line by line, as Markdown does: a block opens with a line starting with three
backticks and an info string (`python`, `Python`, `py`, `python3`, or none), and closes only
at a line holding nothing but backticks, so a stray or inline fence inside prose or code does
not pair with the real block's opener. Reasoning (`<think>` ... `</think>`) is dropped first,
and the last complete block that defines ModelNew wins: models put drafts before the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PYTHON_TAGS = {"", "python", "py", "python3", "py3"}
_OPEN = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$")
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_EDIT = re.compile(
    r"^<{5,9} SEARCH[ \t]*\n(.*?)^={5,9}[ \t]*\n(.*?)^>{5,9} REPLACE[ \t]*$",
    re.DOTALL | re.MULTILINE,
)


class NoCode(Exception):
    """The answer holds no usable file; the message is what the model is told."""


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    complete: bool


def strip_reasoning(text: str) -> str:
    """Drop `<think>` drafts (an unclosed one at the start runs to its `</think>` or the end)."""
    text = _THINK.sub("", text)
    head = re.match(r"\s*<(think|thinking|reasoning)>", text, re.IGNORECASE)
    if head:
        close = re.search(rf"</{head.group(1)}>", text, re.IGNORECASE)
        text = text[close.end() :] if close else ""
    return text


def fenced_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    fence: str | None = None
    lang = ""
    lines: list[str] = []
    for line in text.splitlines():
        if fence is None:
            m = _OPEN.match(line)
            if m:
                fence, lang, lines = m.group(1), m.group(2).lower(), []
            continue
        stripped = line.strip()
        if (
            stripped
            and stripped[0] == fence[0]
            and set(stripped) == {fence[0]}
            and len(stripped) >= len(fence)
        ):
            blocks.append(Block(lang, "\n".join(lines), True))
            fence = None
        else:
            lines.append(line)
    if fence is not None:
        blocks.append(Block(lang, "\n".join(lines), False))
    return blocks


def extract_code(text: str) -> str:
    """The last complete fenced Python block that defines ModelNew."""
    body = strip_reasoning(text)
    blocks = [b for b in fenced_blocks(body) if b.lang in PYTHON_TAGS]
    complete = [
        b for b in blocks if b.complete and "class ModelNew" in b.text and not _EDIT.search(b.text)
    ]
    if complete:
        return complete[-1].text.strip() + "\n"
    if any(not b.complete and "class ModelNew" in b.text for b in blocks):
        raise NoCode(
            "the answer was cut off inside the code block; answer with a shorter complete file"
        )
    if not blocks:
        if not text.strip():
            raise NoCode("the answer was empty")
        raise NoCode("no ```python code block found in the answer")
    raise NoCode("no code block of the answer defines class ModelNew")


def apply_edits(text: str, base: str) -> str | None:
    """`base` with the answer's SEARCH/REPLACE edits applied in order; None if the answer has none.
    Raises NoCode when an edit's SEARCH text is not in the file (saying which)."""
    body = strip_reasoning(text)
    edits = _EDIT.findall(body)
    if not edits:
        return None
    out = base
    for n, (search, replace) in enumerate(edits, 1):
        if search in out:
            out = out.replace(search, replace, 1)
            continue
        loose = _loose_find(out, search)
        if loose is None and (loose := _line_start(out, search)) is not None:
            replace = replace.rstrip("\n")  # the rest of the line stays after it
        if loose is None:
            first = next((ln.strip() for ln in search.splitlines() if ln.strip()), "")
            raise NoCode(
                f"edit {n}'s SEARCH text is not in the file (it starts {first[:80]!r}); copy the lines "
                f"exactly, or answer with the whole file"
            )
        start, end = loose
        out = out[:start] + replace + out[end:]
    if "class ModelNew" not in out:
        raise NoCode("after your edits the file no longer defines class ModelNew")
    return out


def _loose_find(text: str, search: str) -> tuple[int, int] | None:
    """The span of `search` in `text` ignoring trailing whitespace on each line (models often drop it)."""
    want = [ln.rstrip() for ln in search.strip("\n").splitlines()]
    if not want:
        return None
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    for i in range(len(lines) - len(want) + 1):
        if all(lines[i + j].rstrip() == want[j] for j in range(len(want))):
            return offsets[i], offsets[i + len(want)]
    return None


def _line_start(text: str, search: str) -> tuple[int, int] | None:
    """A SEARCH that stops inside a line (`x = f(a, mask=m` of `x = f(a, mask=m, other=0)`):
    the span of that text without its line end, when it occurs exactly once (never a guess)."""
    head = search.rstrip("\n")
    if not head.strip() or text.count(head) != 1:
        return None
    start = text.index(head)
    return start, start + len(head)


def extract_candidate(text: str, base: str | None = None) -> tuple[str, str]:
    """(file, how): a whole file ('file') wins; else `base` with the answer's edits ('edits')."""
    try:
        return extract_code(text), "file"
    except NoCode as no_file:
        if base is None:
            raise
        edited = apply_edits(text, base)
        if edited is None:
            raise no_file
        return edited if edited.endswith("\n") else edited + "\n", "edits"
