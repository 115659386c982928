"""Where targets are: LSP ranges (0-based lines, UTF-16 columns, end exclusive) and ids.

The syntax tree counts columns in UTF-8 bytes; editors count UTF-16 code units. Ids are
kind + qualified name, with a hash of the target's own text only to tell duplicates apart,
so they survive edits anywhere else in the file.
"""

from __future__ import annotations

import ast
import bisect

from kernelevo.digest import text_hash
from kernelevo.targets import cuda_source
from kernelevo.targets.model import Target

# A node with a position: a definition, a kernel-holding assignment or a source string.
Located = ast.stmt | ast.expr
# (kind, name, qualified name, node, ops, line offset of its chunk): what make_targets turns into a Target.
FoundTarget = tuple[str, str, str, Located, list[str], int]


def char_col(line: str, byte_col: int) -> int:
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def utf16(line: str, char_col: int) -> int:
    if line.isascii():
        return char_col
    return char_col + sum(1 for ch in line[:char_col] if ord(ch) > 0xFFFF)


def node_span(lines: list[str], node: Located, off: int) -> tuple[int, int, int, int]:
    """Character span (line, col, end line, end col) of a node, decorators included."""
    l0, b0 = node.lineno - 1 + off, node.col_offset
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        d = decorators[0]
        l0 = d.lineno - 1 + off
        line = lines[l0]
        at = line.rfind("@", 0, char_col(line, d.col_offset))
        c0 = at if at >= 0 else char_col(line, d.col_offset)
    else:
        c0 = char_col(lines[l0], b0)
    l1 = (node.end_lineno or node.lineno) - 1 + off
    c1 = char_col(lines[l1], node.end_col_offset or 0)
    return l0, c0, l1, c1


def slice_text(lines: list[str], l0: int, c0: int, l1: int, c1: int) -> str:
    if l0 == l1:
        return lines[l0][c0:c1]
    return "\n".join([lines[l0][c0:], *lines[l0 + 1 : l1], lines[l1][:c1]])


def make_targets(
    path: str, lines: list[str], found: list[FoundTarget]
) -> list[tuple[Target, Located]]:
    """Targets (sorted, ids made unique) from (kind, name, qualname, node, ops, line offset) tuples."""
    made: list[tuple[Target, Located]] = []
    for kind, name, qual, node, ops, off in found:
        l0, c0, l1, c1 = node_span(lines, node, off)
        t = Target(
            id=f"{kind}:{qual}",
            kind=kind,
            name=name,
            qualname=qual,
            path=path,
            start_line=l0,
            start_col=utf16(lines[l0], c0),
            end_line=l1,
            end_col=utf16(lines[l1], c1),
            ops=ops,
            source_hash=text_hash(slice_text(lines, l0, c0, l1, c1)),
        )
        made.append((t, node))
    dedupe_ids([t for t, _ in made])
    made.sort(key=lambda tn: (tn[0].start_line, tn[0].start_col, tn[0].id))
    return made


def dedupe_ids(targets: list[Target]) -> None:
    groups: dict[str, list[Target]] = {}
    for t in targets:
        groups.setdefault(t.id, []).append(t)
    for same in groups.values():
        if len(same) > 1:
            for t in same:
                t.id = f"{t.id}@{t.source_hash[:8]}"
            seen: dict[str, int] = {}
            for t in same:
                n = seen.get(t.id, 0)
                seen[t.id] = n + 1
                if n:
                    t.id = f"{t.id}#{n + 1}"


def cu_file_targets(path: str, source: str, lines: list[str]) -> list[Target]:
    """One target per `__global__` kernel of a .cu/.cuh file."""
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def pos(offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(starts, offset) - 1
        return line, offset - starts[line]

    made = []
    for k in cuda_source.kernels_in(source):
        (l0, c0), (l1, c1) = pos(k.start), pos(k.end)
        made.append(
            Target(
                id=f"cuda_file:{k.name}",
                kind="cuda_file",
                name=k.name,
                qualname=k.name,
                path=path,
                start_line=l0,
                start_col=utf16(lines[l0], c0),
                end_line=l1,
                end_col=utf16(lines[l1], c1),
                ops=[],
                source_hash=text_hash(source[k.start : k.end]),
            )
        )
    dedupe_ids(made)
    return made
