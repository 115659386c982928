"""What one chunk of top-level statements holds: its functions, Triton kernels, classes and
module-level values, put together from the per-definition facts of facts.py.

A chunk is the unit the parse cache keeps (chunks.py), so its facts are cached with it;
`lighten` drops the syntax trees of a cached chunk and keeps only the positions detection reads.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kernelevo.targets.facts import ClassFacts, FuncFacts, class_facts, function_facts
from kernelevo.targets.imports import resolve_expr
from kernelevo.targets.op_names import TRITON_DECORATORS


@dataclass
class ChunkFacts:
    """What one chunk contributes, before the file is put together (cacheable per chunk)."""

    functions: list[FuncFacts] = field(default_factory=list)
    kernels: list[tuple[str, ast.stmt]] = field(default_factory=list)
    classes: list[ClassFacts] = field(default_factory=list)
    values: dict[str, ast.expr] = field(default_factory=dict)
    calls: list[ast.Call] = field(default_factory=list)
    cu_refs: list[ast.Constant] = field(default_factory=list)
    jit_assigns: list[tuple[str, ast.stmt, str]] = field(
        default_factory=list
    )  # (kernel, statement, function)


def chunk_facts(body: list[ast.stmt], aliases: dict[str, str], want_cuda: bool) -> ChunkFacts:
    out = ChunkFacts()
    for stmt in top_level(body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.functions.append(function_facts(stmt, stmt.name, aliases, None, want_cuda))
            if is_triton_kernel(stmt, aliases):
                out.functions[-1].triton_kernel = True
                out.kernels.append((stmt.name, stmt))
        elif isinstance(stmt, ast.ClassDef):
            queue: list[tuple[ast.ClassDef, str]] = [(stmt, stmt.name)]
            while queue:
                node, qual = queue.pop()
                c, nested = class_facts(node, qual, aliases, want_cuda)
                out.classes.append(c)
                queue.extend(nested)
        else:
            if isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    if isinstance(t, ast.Name):
                        out.values[t.id] = stmt.value
                wrapped = _jit_wrapped(stmt.value, aliases)
                if wrapped is not None:
                    out.jit_assigns.extend(
                        (t.id, stmt, wrapped) for t in stmt.targets if isinstance(t, ast.Name)
                    )
            if want_cuda:
                for sub in ast.walk(stmt):
                    if isinstance(sub, ast.Call):
                        out.calls.append(sub)
                    elif (
                        isinstance(sub, ast.Constant)
                        and isinstance(sub.value, str)
                        and sub.value.endswith((".cu", ".cuh"))
                    ):
                        out.cu_refs.append(sub)
    return out


class _Stub:
    """Where a definition is, without its syntax tree: all cached detection needs of it."""

    __slots__ = ("col_offset", "decorator_list", "end_col_offset", "end_lineno", "lineno", "name")

    def __init__(self, node: ast.stmt | ast.expr) -> None:
        self.name = getattr(node, "name", "")
        self.lineno, self.col_offset = node.lineno, node.col_offset
        self.end_lineno, self.end_col_offset = node.end_lineno, node.end_col_offset
        decorators = getattr(node, "decorator_list", None)
        self.decorator_list = [_Stub(decorators[0])] if decorators else []


def lighten(items: ChunkFacts) -> None:
    """Keep positions, drop syntax trees: for cached chunks that only detection will read.

    A stub stands where a node was; detection reads only the positions and names it keeps.
    """
    for f in items.functions:
        f.node, f.local_values = _stub(f.node), {}
    items.kernels = [(name, _stub(node)) for name, node in items.kernels]
    items.jit_assigns = [(name, _stub(node), fn) for name, node, fn in items.jit_assigns]
    for c in items.classes:
        c.node = _stub(c.node)
        for m in c.methods.values():
            m.node, m.local_values = _stub(m.node), {}
    items.values = {}


def _stub(node: Any) -> Any:
    """A `_Stub` in the place (and under the type) of the node it replaces."""
    return _Stub(node)


def top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements a file runs at import, through if/try/with blocks, not `__main__` ones."""
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, (ast.If, ast.Try, ast.With)):
            inner: list[ast.stmt] = []
            for part in ("body", "orelse", "finalbody"):
                inner.extend(getattr(stmt, part, []) or [])
            for h in getattr(stmt, "handlers", []) or []:
                inner.extend(h.body)
            if isinstance(stmt, ast.If) and is_main_guard(stmt):
                continue
            stack.extend(reversed(inner))
        else:
            yield stmt


def is_main_guard(stmt: ast.If) -> bool:
    t = stmt.test
    return isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"


def _jit_wrapped(value: ast.expr, aliases: dict[str, str]) -> str | None:
    """`triton.jit(f)` or `triton.jit(**opts)(f)`: the name of the function made a kernel."""
    if (
        not isinstance(value, ast.Call)
        or len(value.args) != 1
        or not isinstance(value.args[0], ast.Name)
    ):
        return None
    func = value.func.func if isinstance(value.func, ast.Call) else value.func
    return value.args[0].id if resolve_expr(func, aliases) in TRITON_DECORATORS else None


def is_triton_kernel(fn: ast.FunctionDef | ast.AsyncFunctionDef, aliases: dict[str, str]) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if resolve_expr(target, aliases) in TRITON_DECORATORS:
            return True
    return False
