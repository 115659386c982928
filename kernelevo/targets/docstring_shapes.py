"""Input shapes a target's docstring documents, as small concrete sizes.

Kernel code often states its shapes only in prose: flash-attention's `apply_rotary` says
`x: (batch, seqlen, nheads, headdim)` and `cos: (seqlen_ro, rotary_dim / 2)`, and asserts on them,
so no generic guess fits. The styles read here: `x: (B, T, C)`, `x (Tensor): shape (B, T, C)`,
`x : Tensor of shape (N, C, H, W)`, `x: [batch, seq, dim]`, mamba's `u: r(B D L)`; the first
bracket after the name's colon is its shape. Each symbol gets one size for the whole call (a symbol that two arguments
share stays equal), chosen by its name: batch 2, sequence 16, heads 4, head and model widths 64,
spatial 8; `rotary_dim / 2` is evaluated.
"""

from __future__ import annotations

import ast
import re

_ENTRY = re.compile(r"^\s*\**(?P<name>[A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:\s*(?P<rest>.*)$")
_BRACKET = re.compile(r"[\(\[]([^()\[\]]*)[\)\]]")

_BATCH = {"b", "bs", "bsz", "batch", "batch_size", "nbatch", "n_batch", "num_batches"}
_SPATIAL = {"h", "w", "d", "height", "width", "depth", "kh", "kw"}
_HEADS = {"nh", "nheads", "n_heads", "heads", "num_heads", "n_head", "nhead"}


def symbol_size(symbol: str, widths: list[int]) -> int:
    """A small size for a dimension named `symbol`; `widths` are sizes the module's own weights have."""
    s = symbol.lower()
    if s in _BATCH:
        return 2
    if s in _HEADS:
        return 4
    if s in _SPATIAL:
        return 8
    if "seq" in s or "len" in s or s in ("t", "l", "s", "n_ctx", "tokens", "time"):
        return 16
    if "dim" in s or "hidden" in s or "embd" in s or "embed" in s or s in ("c", "e", "k", "n"):
        return widths[0] if widths else 64
    return 16


def _evaluate(expr: str, sizes: dict[str, int], widths: list[int]) -> int | None:
    try:
        node = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        return None

    def value(n: ast.expr) -> int | None:
        if (
            isinstance(n, ast.Constant)
            and isinstance(n.value, int)
            and not isinstance(n.value, bool)
        ):
            return n.value
        if isinstance(n, ast.Name):
            return sizes.setdefault(n.id, symbol_size(n.id, widths))
        if isinstance(n, ast.BinOp):
            a, b = value(n.left), value(n.right)
            if a is None or b is None:
                return None
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Sub):
                return a - b
            if isinstance(n.op, ast.Mult):
                return a * b
            if isinstance(n.op, (ast.Div, ast.FloorDiv)) and b:
                return a // b
        return None

    got = value(node)
    return got if got is not None and got > 0 else None


def documented_shapes(
    doc: str | None, names: list[str], widths: list[int]
) -> dict[str, tuple[int, ...]]:
    """Concrete shapes for the arguments in `names` whose shape the docstring states."""
    if not doc:
        return {}
    texts: dict[str, str] = {}
    for line in doc.splitlines():
        m = _ENTRY.match(line)
        if m and m.group("name") in names and m.group("name") not in texts:
            bracket = _BRACKET.search(m.group("rest"))
            if bracket and bracket.group(1).strip():
                texts[m.group("name")] = bracket.group(1)
    sizes: dict[str, int] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    for name, text in texts.items():
        parts = text.split(",") if "," in text else text.split()  # mamba's `u: r(B D L)`
        if "," not in text and any(len(p) > 3 for p in parts):
            continue  # `(optional)`, `(the input)`: words, not dimensions
        dims = [_evaluate(part, sizes, widths) for part in parts if part.strip()]
        if dims and all(d is not None for d in dims):
            shapes[name] = tuple(d for d in dims if d is not None)
    return shapes
