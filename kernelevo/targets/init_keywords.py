"""Constructors that take arguments by keyword only (`def __init__(self, *, dim, depth)`, as most
of lucidrains's models and SAM's mask decoder do).

A KernelBench task builds its model as `Model(*get_init_inputs())`, by position. Where the user's
constructor takes some arguments by name only, the task lists those values last in
get_init_inputs() and patches Model's constructor to pass them on by name; the names sit in the
task as `_KERNELEVO_INIT_KEYWORDS`, from which the applied kernel's regression test builds the
user's class the same way. Users say such arguments as `init=lambda: dict(dim=64, depth=2)`.
"""

from __future__ import annotations

import ast
import contextlib

INIT_KEYWORDS = "_KERNELEVO_INIT_KEYWORDS"


def init_by_name(keywords: list[str]) -> str:
    """The task text after Model's class that makes `Model(*args)` pass its last
    `len(keywords)` values by these names ("" where there are none)."""
    if not keywords:
        return ""
    return (
        "\n\n\n# Its constructor takes these arguments by keyword only: get_init_inputs() lists them\n"
        "# last, in this order, and Model(*get_init_inputs()) passes them on by name.\n"
        f"{INIT_KEYWORDS} = {tuple(keywords)!r}\n"
        "_kernelevo_init = Model.__init__\n\n\n"
        "def _kernelevo_init_by_name(self, *args):\n"
        f"    n = len(args) - len({INIT_KEYWORDS})\n"
        f"    _kernelevo_init(self, *args[:n], **dict(zip({INIT_KEYWORDS}, args[n:])))\n\n\n"
        "Model.__init__ = _kernelevo_init_by_name"
    )


def init_keywords(task_source: str) -> list[str]:
    """The names `init_by_name` wrote into a task (none where every constructor argument is
    passed by position)."""
    with contextlib.suppress(SyntaxError):
        for stmt in ast.parse(task_source).body:
            if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == INIT_KEYWORDS for t in stmt.targets
            ):
                with contextlib.suppress(ValueError, TypeError):
                    value = ast.literal_eval(stmt.value)
                    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
                        return list(value)
    return []


def split_keyword_init(expr: str) -> tuple[str, list[str]]:
    """A user's constructor arguments as (positional values, names passed by keyword):
    `dict(dim=64, depth=2)` or `{"dim": 64, "depth": 2}` becomes ("(64, 2)", ["dim", "depth"]);
    any other expression is positional as written."""
    try:
        node = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        return expr, []
    pairs: list[tuple[str, ast.expr]] = []
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dict"
        and not node.args
        and node.keywords
        and all(k.arg is not None for k in node.keywords)
    ):
        pairs = [(str(k.arg), k.value) for k in node.keywords]
    elif (
        isinstance(node, ast.Dict)
        and node.keys
        and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys)
        and all(str(k.value).isidentifier() for k in node.keys if isinstance(k, ast.Constant))
    ):
        pairs = [
            (str(k.value), v)
            for k, v in zip(node.keys, node.values, strict=True)
            if isinstance(k, ast.Constant)
        ]
    if not pairs:
        return expr, []
    values = ", ".join(ast.get_source_segment(expr.strip(), v) or ast.unparse(v) for _, v in pairs)
    return f"({values},)", [name for name, _ in pairs]


def required_keyword_only(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    """The parameters a call must pass by name (keyword-only, no default)."""
    args = fn.args
    return [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
