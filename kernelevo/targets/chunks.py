"""Parsing a file one top-level statement at a time.

Two reasons: a file mid-edit rarely parses, and one broken function should hide only
itself; and the language server re-detects on every keystroke, when all but one statement
is unchanged, so parsed statements are cached by their text (line numbers inside a cached
piece are relative to it; `Chunk.offset` places it in the file).
"""

from __future__ import annotations

import ast
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

_CONTINUES = re.compile(r"(else|elif|except|finally)\b")
_MERGE = 3


@dataclass
class Parsed:
    body: (
        list[ast.stmt] | None
    )  # None after a failed parse, or once detection kept only what it needs
    error: tuple[int, str] | None = None  # (line within the text, message)
    derived: dict = field(default_factory=dict)  # what detection computed from body, by its inputs
    text: str = ""
    aliases: dict[str, str] | None = None

    def tree(self) -> list[ast.stmt]:
        """The statements, parsed again if detection dropped them to save memory and GC time."""
        if self.body is None and self.error is None:
            self.body = ast.parse(self.text).body
        return self.body or []


@dataclass
class Chunk:
    offset: int  # add to the body's line numbers to get the file's
    parsed: Parsed

    @property
    def body(self) -> list[ast.stmt]:
        return self.parsed.tree()


def _parse(text: str) -> Parsed:
    try:
        return Parsed(ast.parse(text).body)
    except SyntaxError as exc:
        return Parsed(None, (exc.lineno or 1, exc.msg))
    except ValueError as exc:  # e.g. null bytes
        return Parsed(None, (1, str(exc)))


def parse_whole(source: str, lines: list[str], path: str) -> tuple[list[Chunk], list[str]]:
    """The file as one chunk with real line numbers; piece by piece only when it does not parse."""
    whole = _parse(source)
    if whole.error is None:
        return [Chunk(0, whole)], []
    chunks, errors = split_and_parse(lines, path, _parse)
    for c in chunks:
        for stmt in c.body:
            ast.increment_lineno(stmt, c.offset)
        c.offset = 0
    return chunks, errors


def split_and_parse(lines: list[str], path: str, parse) -> tuple[list[Chunk], list[str]]:
    """Parse each top-level statement; a piece that fails is retried joined to the next few
    (in case the lexical split was wrong), else reported and skipped."""
    starts = statement_starts(lines, "\n".join(lines))
    chunks: list[Chunk] = []
    errors: list[str] = []
    i = 0
    while i < len(starts):
        first_error: tuple[int, str] | None = None
        for j in range(i + 1, min(i + 1 + _MERGE, len(starts)) + 1):
            a = starts[i]
            b = starts[j] if j < len(starts) else len(lines)
            parsed = parse("\n".join(lines[a:b]))
            if parsed.error is None:
                chunks.append(Chunk(a, parsed))
                i = j
                break
            first_error = first_error or parsed.error
        else:
            line, msg = first_error or (1, "cannot parse")
            errors.append(f"{path}:{starts[i] + line}: {msg}")
            i += 1
    return chunks, errors


class ChunkCache:
    """Parsed pieces of the latest text of recently seen files (memory stays bounded by them)."""

    def __init__(self, max_files: int = 16) -> None:
        self._files: OrderedDict[str, dict[str, Parsed]] = OrderedDict()
        self._max = max_files
        self.lock = threading.Lock()

    def parse(self, lines: list[str], path: str) -> tuple[list[Chunk], list[str]]:
        old = self._files.pop(path, {})
        new: dict[str, Parsed] = {}

        def cached(text: str) -> Parsed:
            hit = new.get(text) or old.get(text)
            if hit is None:
                hit = _parse(text)
                hit.text = text
            new[text] = hit
            return hit

        result = split_and_parse(lines, path, cached)
        self._files[path] = new
        while len(self._files) > self._max:
            self._files.popitem(last=False)
        return result

    def clear(self) -> None:
        self._files.clear()


def statement_starts(lines: list[str], source: str | None = None) -> list[int]:
    """Indices of lines that begin a top-level statement (decorators start their definition).

    A line starts one when it begins in column 0 with code, outside any multi-line string.
    Strings and comments are found by one regular-expression pass over the text (fast: this
    runs on every keystroke); a line wrongly taken for a start, e.g. inside brackets that span
    lines, only makes its piece fail to parse alone, and the piece is retried joined to the next.
    """
    if source is None:
        source = "\n".join(lines)
    inside = bytearray(len(lines) + 1)
    line, pos = 0, 0
    for m in _LEXEME.finditer(source):
        text = m.group()
        if text[0] == "#" or "\n" not in text:
            continue
        line += source.count("\n", pos, m.start())
        last = line + text.count("\n")
        inside[line + 1 : last + 1] = b"\x01" * (last - line)
        line, pos = last, m.end()
    starts: list[int] = []
    after_decorator = False
    idx, pos = 0, 0
    for m in _COL0.finditer(source):
        idx += source.count("\n", pos, m.start())
        pos = m.start()
        if inside[idx] or _CONTINUES.match(source, pos):
            continue
        if not after_decorator:
            starts.append(idx)
        after_decorator = source.startswith("@", pos)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    return starts


_LEXEME = re.compile(
    r"#[^\n]*"
    r'|[rRbBuUfF]{0,2}(?:"""(?:\\.|[^\\])*?"""'
    r"|'''(?:\\.|[^\\])*?'''"
    r'|"(?:\\.|[^"\\\n])*"'
    r"|'(?:\\.|[^'\\\n])*')",
    re.S,
)
_COL0 = re.compile(r"^[^ \t\r\f#)\]}\n]", re.M)
