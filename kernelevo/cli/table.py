"""Plain-text tables for the terminal: the command line's and the benchmarks' one renderer."""

from __future__ import annotations

from collections.abc import Sequence


def render(rows: Sequence[Sequence[object]], rule: bool = False) -> list[str]:
    """Each column as wide as its widest cell, columns two spaces apart, no trailing blanks;
    `rule` puts a line of dashes under the first row (the heading)."""
    cells = [[str(c) for c in row] for row in rows]
    if not cells:
        return []
    if any(len(row) != len(cells[0]) for row in cells):
        raise ValueError("every row of a table needs one cell per column")
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    if rule:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return lines
