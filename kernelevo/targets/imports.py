"""Import-alias resolution: what `F`, `nn`, `tl` or `load_inline` mean in a user's file.

Resolving names lets detection say `torch.nn.functional.gelu` for `F.gelu`, whatever the
user called their imports, without importing anything.
"""

from __future__ import annotations

import ast


def bind_import(node: ast.Import | ast.ImportFrom, aliases: dict[str, str]) -> None:
    """Record the names an import statement binds, as full dotted names."""
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.asname:
                aliases[a.asname] = a.name
            else:
                root = a.name.split(".", 1)[0]
                aliases[root] = root
        return
    # a relative import keeps its dots (`.fast_norm.rms_norm2d`): the user's own package
    prefix = "." * node.level + (f"{node.module}." if node.module else "")
    if prefix == "":
        return
    for a in node.names:
        if a.name != "*":
            aliases[a.asname or a.name] = f"{prefix}{a.name}"


def collect_module_aliases(body: list[ast.stmt]) -> dict[str, str]:
    """Aliases bound at module level, including inside top-level try/if blocks."""
    aliases: dict[str, str] = {}
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bind_import(node, aliases)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for part in ("body", "orelse", "finalbody"):
                stack.extend(reversed(getattr(node, part, []) or []))
            for handler in getattr(node, "handlers", []) or []:
                stack.extend(reversed(handler.body))
    return aliases


def dotted(node: ast.expr) -> str | None:
    """`a.b.c` for a chain of attributes on a name; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def resolve(name: str | None, aliases: dict[str, str]) -> str | None:
    """Full dotted name of `name` if its root is an imported alias, else None."""
    if not name:
        return None
    root, _, rest = name.partition(".")
    full = aliases.get(root)
    if full is None:
        return None
    return f"{full}.{rest}" if rest else full


def resolve_expr(node: ast.expr, aliases: dict[str, str]) -> str | None:
    return resolve(dotted(node), aliases)
