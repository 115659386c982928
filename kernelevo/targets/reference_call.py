"""Which code a task calls for a target: the reference the search must match.

Modules and functions are their own reference. A hand-written kernel is reached through
the Python code that launches it, since that is what the user's program calls and what a
faster version must replace.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from kernelevo.targets.analysis import Analysis
from kernelevo.targets.facts import ClassFacts, FuncFacts
from kernelevo.targets.model import Target
from kernelevo.targets.spans import Located


class NoReference(Exception):
    """No single piece of code in the file can serve as the reference; the message says what to do."""


@dataclass
class Reference:
    kind: str  # "class" | "function"
    node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    qualname: str
    call: ast.FunctionDef | ast.AsyncFunctionDef  # forward() or the function itself
    cls: ClassFacts | None
    facts: FuncFacts

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def init(self) -> ast.FunctionDef | None:
        if self.cls is None:
            return None
        for stmt in self.cls.node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                return stmt
        return None


def resolve_reference(a: Analysis, t: Target) -> Reference:
    """The code a task for `t` calls; NoReference (with what to do) when no one piece can be."""
    where = t.location()
    if t.kind == "module":
        return _class_ref(a, a.classes[t.qualname])
    if t.kind in ("function", "triton_launcher"):
        if t.qualname in a.functions:
            f = a.functions[t.qualname]
            return Reference("function", f.node, f.qualname, f.node, None, f)
        owner = a.classes.get(t.qualname.rsplit(".", 1)[0])
        if owner is not None and owner.is_module:
            return _class_ref(a, owner)
        raise NoReference(
            f"{where}: {t.qualname} is a method of {t.qualname.rsplit('.', 1)[0]}, which is not an nn.Module; "
            "build the task from the function or module that calls it"
        )
    if t.kind == "triton_kernel":
        launchers = a.launchers_of(t.name)
        return _one_user(a, t, [u.qualname for u in launchers], f"launches {t.name}[grid](...)")
    if t.kind in ("cuda_inline", "cuda_file"):
        names = _cuda_handles(a, t)
        users = _users_of(a, names)
        return _one_user(a, t, users, f"uses {', '.join(sorted(names)) or t.name}")
    raise NoReference(f"{where}: cannot build a task for a {t.kind} target")


def _class_ref(a: Analysis, c: ClassFacts) -> Reference:
    fwd = a.method(c, "forward")
    if fwd is None:
        raise NoReference(f"{a.path}:{c.node.lineno}: {c.qualname} has no forward()")
    return Reference("class", c.node, c.qualname, fwd.node, c, fwd)


def _one_user(a: Analysis, t: Target, users: list[str], what: str) -> Reference:
    users = list(dict.fromkeys(users))
    if not users:
        raise NoReference(
            f"{t.location()}: no function or nn.Module in {os.path.basename(a.path)} {what}; add a Python "
            f"function that calls it (it becomes the reference the search must match)"
        )
    if len(users) > 1:
        raise NoReference(
            f"{t.location()}: {t.name} is used by {', '.join(users)}; build the task from one of them, e.g. "
            f"kernelevo task {a.path}::{users[0]}"
        )
    qual = users[0]
    if qual in a.functions:
        f = a.functions[qual]
        return Reference("function", f.node, qual, f.node, None, f)
    cls = a.classes.get(qual) or a.classes.get(qual.rsplit(".", 1)[0])
    if cls is None or not cls.is_module:
        raise NoReference(
            f"{t.location()}: {t.name} is used by {qual}, which is neither a function nor an nn.Module"
        )
    return _class_ref(a, cls)


def _cuda_handles(a: Analysis, t: Target) -> set[str]:
    """Names through which Python code reaches the compiled CUDA: result variables and loader functions."""
    names: set[str] = set()
    site = a.cuda_sites.get(t.qualname)
    node: Located | None = site.call if site is not None else a.nodes.get(t.id)
    owner = site.owner if site is not None else None
    if node is None:
        return names
    for stmt in a.body:
        if stmt.lineno <= node.lineno <= (stmt.end_lineno or stmt.lineno):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                names.update(
                    n.id for tg in targets for n in ast.walk(tg) if isinstance(n, ast.Name)
                )
            elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and owner is None:
                owner = stmt.name
    if owner is not None:
        top = owner.split(".", 1)[0]
        f = a.functions.get(owner)
        if f is not None:
            names.add(owner)
            names.update(v for v, val in f.local_values.items() if _contains(val, node))
            for sub in ast.walk(f.node):
                if isinstance(sub, ast.Global):
                    names.update(sub.names)
        elif top in a.classes:
            names.add("class:" + top)
    return names


def _contains(tree: ast.AST, node: ast.AST) -> bool:
    return any(n is node for n in ast.walk(tree))


def _users_of(a: Analysis, names: set[str]) -> list[str]:
    users: list[str] = []
    for n in names:
        if n.startswith("class:"):
            cls = a.classes[n[6:]]
            if cls.is_module:
                users.append(cls.qualname)
    plain = {n for n in names if not n.startswith("class:")}
    for qual, f in a.functions.items():
        if qual not in plain and f.names & plain:
            users.append(qual)
    for qual, c in a.classes.items():
        if c.is_module and any(m.names & plain for m in c.methods.values()) and qual not in users:
            users.append(qual)
    return users


def forward_call(cls: ast.AST, names: list[str], keywords: dict[str, str]) -> str:
    """A forward taking the task's positional inputs and calling the user's as the recorded call
    did: by name where forward is decorated (decorators such as Hugging Face's
    `merge_with_config_defaults` add keyword arguments, which collide with a positional call), and
    with the keyword values the call passed where the outputs differ without them."""
    forward = next(
        (
            f
            for f in getattr(cls, "body", [])
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == "forward"
        ),
        None,
    )
    by_name = forward is not None and bool(forward.decorator_list) and bool(names)
    if not by_name and not keywords:
        return ""
    params = ", ".join(names) if by_name else "*args"
    passed = [f"{n}={n}" for n in names] if by_name else ["*args"]
    passed += [f"{k}={v}" for k, v in keywords.items()]
    why = []
    if by_name:
        why.append(
            "# Its forward is decorated: the task's inputs are passed by name, as the recorded call\n"
            "# passed them (a positional call collides with keywords the decorators add).\n"
        )
    if keywords:
        why.append(
            "# The recorded call passed these keyword values, and the outputs differ without them.\n"
        )
    return (
        "\n\n\n" + "".join(why) + "_kernelevo_forward = Model.forward\n\n\n"
        f"def _kernelevo_forward_as_called(self, {params}):\n"
        f"    return _kernelevo_forward(self, {', '.join(passed)})\n\n\n"
        "Model.forward = _kernelevo_forward_as_called"
    )
