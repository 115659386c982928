"""What a reference needs from its file: the imports, constants and helpers it reads, found by
Python's own scoping (symtable), and the text of those statements as the user wrote them.

Kept apart from the task layout (extract.py) because it is the part that decides whether a
copied reference runs on its own: a name it reads and the task lacks is a NameError later.
"""

from __future__ import annotations

import ast
import symtable

from kernelevo.targets.analysis import Analysis
from kernelevo.targets.imports import resolve_expr
from kernelevo.targets.reference_call import Reference


def bindings(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
        return set()
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"}
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(stmt, (ast.If, ast.Try, ast.With)):
        if (
            isinstance(stmt, ast.If)
            and isinstance(stmt.test, ast.Compare)
            and isinstance(stmt.test.left, ast.Name)
            and stmt.test.left.id == "__name__"
        ):
            return set()
        inner = (
            list(stmt.body)
            + list(getattr(stmt, "orelse", []))
            + list(getattr(stmt, "finalbody", []))
        )
        for h in getattr(stmt, "handlers", []):
            inner.extend(h.body)
        return set().union(*(bindings(s) for s in inner)) if inner else set()
    return set()


def uses(node: ast.AST, skip: set[int] | frozenset[int] = frozenset()) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in skip:
            continue
        if isinstance(n, ast.Name):
            out.add(n.id)
        stack.extend(ast.iter_child_nodes(n))
    return out


def free_names(text: str) -> set[str] | None:
    """Names `text` (one definition) reads from the module's globals, from Python's own scoping:
    a parameter or local named like a module-level variable does not pull that variable in.
    None when the text is not a definition symtable can read."""
    try:
        top = symtable.symtable(text, "<target>", "exec")
    except (SyntaxError, ValueError):
        return None
    out: set[str] = set()
    stack = [(top, True)]
    while stack:
        table, is_top = stack.pop()
        for sym in table.get_symbols():
            if not sym.is_referenced():
                continue
            if is_top:
                if not sym.is_imported() and not (sym.is_assigned() and not sym.is_referenced()):
                    out.add(sym.get_name())
            elif sym.is_global() or (
                table.get_type() == "class" and not sym.is_assigned() and not sym.is_local()
            ):
                out.add(sym.get_name())
        stack.extend((child, False) for child in table.get_children())
    return out


def _needs(a: Analysis, stmt: ast.stmt, skip: set[int] | frozenset[int] = frozenset()) -> set[str]:
    """What a statement needs from the file: free names for definitions, every name otherwise."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not skip:
        names = free_names(_dedented(a, stmt))
        if names is not None:
            return names
    return uses(stmt, skip)


def _dedented(a: Analysis, node: ast.stmt) -> str:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
    indent = node.col_offset
    return "\n".join(
        line[indent:] if line[:indent].strip() == "" else line
        for line in (ln.rstrip("\r") for ln in a.lines[first : node.end_lineno or node.lineno])
    )


def needed_statements(a: Analysis, wanted: set[str], exclude: set[int]) -> list[ast.stmt]:
    index: dict[str, list[ast.stmt]] = {}
    for stmt in a.body:
        if id(stmt) in exclude:
            continue
        for name in bindings(stmt):
            index.setdefault(name, []).append(stmt)
    chosen: dict[int, ast.stmt] = {}
    todo = list(wanted)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for stmt in index.get(name, []):
            if id(stmt) not in chosen:
                chosen[id(stmt)] = stmt
                todo.extend(_needs(a, stmt) - seen)
    return sorted(chosen.values(), key=lambda s: s.lineno)


def stmt_text(a: Analysis, stmt: ast.stmt) -> str:
    first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
    return "\n".join(a.lines[first - 1 : stmt.end_lineno]).rstrip()


def example_decorators(a: Analysis, node: ast.AST) -> list[ast.expr]:
    out = []
    for dec in getattr(node, "decorator_list", []):
        target = dec.func if isinstance(dec, ast.Call) else dec
        if resolve_expr(target, a.aliases) == "kernelevo.example":
            out.append(dec)
    return out


def reference_text(a: Analysis, ref: Reference) -> str:
    """The reference's own lines, dedented to top level, without @kernelevo.example."""
    node = ref.node
    drop: set[int] = set()
    for dec in example_decorators(a, node):
        drop.update(range(dec.lineno - 1, dec.end_lineno or dec.lineno))
    first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    indent = node.col_offset
    lines = []
    for i in range(first, node.end_lineno or node.lineno):
        if i in drop:
            continue
        line = a.lines[i].rstrip("\r")
        lines.append(line[indent:] if line[:indent].strip() == "" else line)
    return "\n".join(lines)


def call_args(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    skip_self: bool,
    fixed: dict[str, str] | None = None,
) -> tuple[str, str]:
    """(signature text, call text) for forwarding every argument of `fn`; `fixed` keyword
    arguments (name -> source) are passed as those values and are not in the signature."""
    fixed = fixed or {}
    args = fn.args
    kwonly = [
        (k, d) for k, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if k.arg not in fixed
    ]
    sig_args = ast.arguments(
        posonlyargs=[],
        args=list(args.posonlyargs) + list(args.args),
        vararg=args.vararg,
        kwonlyargs=[k for k, _ in kwonly],
        kw_defaults=[d for _, d in kwonly],
        kwarg=args.kwarg,
        defaults=args.defaults,
    )
    names = [p.arg for p in sig_args.args]
    if skip_self and names:
        names = names[1:]
        sig_args.args = sig_args.args[1:]
    call = list(names)
    if args.vararg:
        call.append("*" + args.vararg.arg)
    call += [f"{k.arg}={k.arg}" for k, _ in kwonly]
    call += [f"{k}={v}" for k, v in fixed.items()]
    if args.kwarg:
        call.append("**" + args.kwarg.arg)
    return ast.unparse(sig_args), ", ".join(call)
