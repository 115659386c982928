"""Dotted names of expressions in Python source (`torch.cuda.Stream`), for source checks and rewrites."""

from __future__ import annotations

import ast
import threading

_PARSING = threading.Lock()


def parse_module(source: str, filename: str = "<unknown>") -> ast.Module:
    """ast.parse, one thread at a time: CPython 3.11-3.12 can fail a parse that runs while another
    thread parses ("SystemError: AST constructor recursion depth mismatch"), and the search checks
    candidates on several evaluation threads at once."""
    with _PARSING:
        return ast.parse(source, filename=filename)


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


def resolved_name(name: str, aliases: dict[str, str]) -> str:
    """`name` with its first part replaced by what the file imported under it (`F.relu` ->
    `torch.nn.functional.relu`), given the file's local name -> full dotted name map."""
    head, _, rest = name.partition(".")
    full = aliases.get(head, head)
    return f"{full}.{rest}" if rest else full
