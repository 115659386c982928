"""What a Python candidate could reach around its imports, found in its syntax tree.

The allowlist in static.py names what may be imported and called. Python offers other routes to
the same places: a banned builtin passed around as a value (`f = eval`), the interpreter's own
names (`__builtins__`), frames and code objects (`gen.gi_frame.f_back.f_globals` reaches the
harness), attribute access by computed name (`operator.attrgetter`), code run from strings
(`typing.get_type_hints` and `functools.singledispatch` evaluate string annotations; `torch.fx`
writes and runs source) and unpickling (`torch.load` runs what a pickle names). Each is refused
with its line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from kernelevo.ast_names import dotted_name, resolved_name
from kernelevo.verify.static_rules import BANNED_BUILTINS, lies_under

__all__ = ["access_problems"]

ALLOWED_DUNDER_NAMES = {"__name__", "__file__", "__doc__", "__class__"}
FRAME_ATTRS = {
    "gi_frame",
    "cr_frame",
    "ag_frame",
    "tb_frame",
    "tb_next",
    "f_back",
    "f_globals",
    "f_locals",
    "f_builtins",
    "f_code",
    "f_trace",
    "gi_code",
    "cr_code",
    "ag_code",
    "func_globals",
}
ROUTES = {
    "operator.attrgetter": "reads attributes by computed name",
    "operator.methodcaller": "calls methods by computed name",
    "typing.get_type_hints": "evaluates annotation strings as code",
    "typing.ForwardRef": "evaluates annotation strings as code",
    "functools.singledispatch": "evaluates annotation strings as code",
    "functools.singledispatchmethod": "evaluates annotation strings as code",
    "torch.load": "unpickles, which runs whatever the pickle names",
    "torch.serialization": "unpickles, which runs whatever the pickle names",
    "torch.hub": "loads and runs code from a folder",
    "torch.package": "loads and runs packaged code",
    "torch.utils.collect_env": "runs shell commands",
    "torch.utils.benchmark": "compiles and runs code from strings",
    "torch.distributed": "opens sockets and unpickles what its peers send",
    "torch.fx": "generates Python source from a graph and runs it",
    "torch.export": "generates Python source from a graph and runs it",
}
_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _children_in_scope(node: ast.AST) -> Iterator[ast.AST]:
    """Every node of `node`'s own scope, nested scopes' insides left out (their names and
    decorators, which belong here, included)."""
    for child in ast.iter_child_nodes(node):
        yield child
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            outside = [*getattr(child, "decorator_list", []), *getattr(child, "bases", [])]
            if not isinstance(child, ast.ClassDef):  # defaults are evaluated where it is defined
                outside += [*child.args.defaults, *(d for d in child.args.kw_defaults if d)]
            for sub in outside:
                yield from ast.walk(sub)
        elif not isinstance(child, _SCOPES):
            yield from _children_in_scope(child)


def _bound(scope: ast.AST) -> set[str]:
    """The names a function-like scope binds as its own locals. A module's or a class body's
    bindings are left out: a lookup there that finds no binding (one made in a branch never
    taken, or deleted) falls back to the builtins, while an unbound local raises."""
    if isinstance(scope, (ast.Module, ast.ClassDef)):
        return set()
    names: set[str] = set()
    declared: set[str] = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = scope.args
        names |= {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
        names |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    for node in _children_in_scope(scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global):
            declared |= set(node.names)  # module names: see above
    return names - declared


def _builtin_references(tree: ast.Module) -> Iterator[ast.Name]:
    """Names read where no enclosing function binds them: they may be the builtins."""

    def visit(scope: ast.AST, enclosing: list[set[str]]) -> Iterator[ast.Name]:
        visible = [*enclosing, _bound(scope)]
        for node in _children_in_scope(scope):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if not any(node.id in names for names in visible):
                    yield node
            elif isinstance(node, _SCOPES):
                # a class body's names are not visible inside its methods
                yield from visit(node, enclosing if isinstance(scope, ast.ClassDef) else visible)

    yield from visit(tree, [])


def access_problems(tree: ast.Module, resolve: dict[str, str]) -> list[str]:
    """`resolve`: local name -> full dotted name, from the file's imports."""
    problems = []
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in _builtin_references(tree):
        if node.id in BANNED_BUILTINS and id(node) not in called:  # calls: static.py says so
            problems.append(
                f"line {node.lineno}: {node.id} is not allowed as a value either: it "
                f"{BANNED_BUILTINS[node.id]}"
            )
        elif (
            node.id.startswith("__")
            and node.id.endswith("__")
            and node.id not in ALLOWED_DUNDER_NAMES
        ):
            problems.append(
                f"line {node.lineno}: {node.id} is off limits: it reaches the interpreter's internals"
            )
    for ref in ast.walk(tree):
        if isinstance(ref, ast.Attribute) and ref.attr in FRAME_ATTRS:
            problems.append(
                f"line {ref.lineno}: .{ref.attr} is not allowed: frames and code objects reach "
                "the harness around the allowlist"
            )
        elif isinstance(ref, (ast.Attribute, ast.Name)):
            full = resolved_name(dotted_name(ref), resolve)
            route = lies_under(full, ROUTES)
            if route and (full == route or not isinstance(ref, ast.Attribute)):
                problems.append(f"line {ref.lineno}: {full} is not allowed: it {ROUTES[route]}")
    return sorted(set(problems), key=lambda p: int(p.split()[1].rstrip(":")))
