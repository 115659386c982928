"""Dotted names of expressions in Python source (`torch.cuda.Stream`), for source checks and rewrites."""

from __future__ import annotations

import ast


def dotted_name(node: ast.AST) -> str:
    """'a.b.c' for a chain of attributes on a name; '' when the chain starts elsewhere (a call, a subscript)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""
