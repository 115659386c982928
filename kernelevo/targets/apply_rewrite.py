"""The edit applied to the user's file: two guard lines at the top of the target's body that
call the kernel for inputs it was verified on, and a guarded import of the kernel module after
the file's own imports (the original code runs whenever the kernel cannot). A `@torch.jit.script`
function cannot call Python: it keeps its body under a private name and a plain function of its
name, written after it, holds the guard.

Apart from the plan (apply.py) because it is the only part that writes into the user's text:
indentation, line endings, docstrings and comments above the body are kept as they were.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from kernelevo.ast_names import dotted_name
from kernelevo.targets import apply_templates as tpl
from kernelevo.targets.analysis import Analysis
from kernelevo.targets.closure import call_args
from kernelevo.targets.edits import ApplyError
from kernelevo.targets.reference_call import Reference


def guarded_source(
    a: Analysis, ref: Reference, module: str, alias: str, run_id: str, in_package: bool
) -> str:
    """The user's file with the guard above the target's body and the kernel module's import."""
    lines = a.source.split("\n")
    eol = "\r" if lines and lines[0].endswith("\r") else ""
    body = ref.call.body
    first = body[1] if len(body) > 1 and _is_docstring(body[0]) else body[0]
    if (_is_docstring(body[0]) and len(body) == 1) or first.lineno == ref.call.lineno:
        raise ApplyError(
            f"{a.path}:{ref.call.lineno}: {ref.call.name} has no body on its own lines; cannot add the guard"
        )
    line = lines[first.lineno - 1]
    indent = line[: len(line) - len(line.lstrip())]
    if len(indent.expandtabs()) != first.col_offset and not line.startswith(indent):
        raise ApplyError(f"{a.path}:{first.lineno}: unusual indentation; cannot add the guard")
    def_line = lines[ref.call.lineno - 1]
    def_indent = def_line[: len(def_line) - len(def_line.lstrip())]
    unit = indent[len(def_indent) :] or "    "
    _, call = call_args(ref.call, skip_self=False)
    guard = [
        f"{indent}if {alias} is not None and {alias}.supports({call}):  "
        + tpl.GUARD_COMMENT.format(run_id=run_id),
        f"{indent}{unit}return {alias}.run({call})",
    ]
    if scripted(ref.call):
        _around_torchscript(a, ref, lines, guard, indent, call, run_id, eol)
    else:
        _above_body(ref, lines, guard, first, indent, eol)
    at = _import_line(a)
    if in_package:
        block = [
            f"try:  # KernelEvo run {run_id}: verified kernel for {ref.qualname}, see {module}.py",
            f"    from . import {module} as {alias}",
            "except ImportError:",
            "    try:",
            f"        import {module} as {alias}",
            "    except Exception:",
            f"        {alias} = None",
            "except Exception:  # backend unavailable here: the original code runs",
            f"    {alias} = None",
        ]
    else:
        block = [
            f"try:  # KernelEvo run {run_id}: verified kernel for {ref.qualname}, see {module}.py",
            f"    import {module} as {alias}",
            "except Exception:  # backend unavailable here: the original code runs",
            f"    {alias} = None",
        ]
    block = [""] + block + ([""] if at < len(lines) and lines[at].strip() else [])
    lines[at:at] = [b + eol for b in block]
    return "\n".join(lines)


def _above_body(
    ref: Reference, lines: list[str], guard: list[str], first: ast.stmt, indent: str, eol: str
) -> None:
    body = ref.call.body
    at = first.lineno - 1
    floor = (body[0].end_lineno or 0) if first is not body[0] else ref.call.lineno
    while (
        at - 1 >= floor
        and lines[at - 1].strip().startswith("#")
        and lines[at - 1].startswith(indent)
    ):
        at -= 1  # the guard goes above comments that describe the original code
    lines[at:at] = [g + eol for g in guard]


def scripted(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Compiled by TorchScript at import (`@torch.jit.script`), which cannot call a Python kernel."""
    return any(
        dotted_name(d.func if isinstance(d, ast.Call) else d).split(".")[-1]
        in ("script", "script_method")
        for d in fn.decorator_list
    )


def _around_torchscript(
    a: Analysis,
    ref: Reference,
    lines: list[str],
    guard: list[str],
    indent: str,
    call: str,
    run_id: str,
    eol: str,
) -> None:
    """A TorchScript function keeps its body and decorator under a private name; a plain function
    of the user's name, right after it, calls the kernel where it applies and the scripted original
    otherwise, so nothing scripted ever calls Python."""
    fn = ref.call
    name = fn.name
    if ref.kind != "function" or isinstance(fn, ast.AsyncFunctionDef):
        raise ApplyError(
            f"{a.path}:{fn.lineno}: {ref.qualname} is compiled by TorchScript as part of a class; "
            "apply works on a scripted module-level function or on plain Python"
        )
    for other in (n for stmt in a.body for n in ast.walk(stmt)):
        if (
            isinstance(other, (ast.FunctionDef, ast.AsyncFunctionDef))
            and other is not fn
            and scripted(other)
            and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(other))
        ):
            raise ApplyError(
                f"{a.path}:{other.lineno}: {other.name} is TorchScript and calls {name}, which "
                "would then be Python; apply it to a function no scripted code calls"
            )
    private = tpl.SCRIPTED_ORIGINAL.format(name=name)
    head = _header(lines, fn)
    renamed = re.sub(
        rf"\bdef\s+{re.escape(name)}\b", f"def {private}", lines[fn.lineno - 1], count=1
    )
    if renamed == lines[fn.lineno - 1]:
        raise ApplyError(f"{a.path}:{fn.lineno}: cannot find `def {name}` on its line")
    lines[fn.lineno - 1] = renamed
    wrapper = [*head, *guard, f"{indent}return {private}({call})"]
    end = fn.end_lineno or fn.lineno
    lines[end:end] = [
        "" + eol,
        "" + eol,
        f"# KernelEvo run {run_id}: {name} calls the verified kernel where it applies, else the "
        f"TorchScript original above" + eol,
        *[w + eol for w in wrapper],
    ]


def _header(lines: list[str], fn: ast.FunctionDef) -> list[str]:
    """The `def` line(s) of a function as written, up to the colon that opens its body."""
    text = "\n".join(line.rstrip("\r") for line in lines[fn.lineno - 1 : fn.body[0].lineno])
    depth = 0
    for tok in tokenize.generate_tokens(io.StringIO(text + "\n").readline):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.OP and tok.string == ":" and depth == 0:
            head = text.split("\n")[: tok.start[0]]
            head[-1] = head[-1][: tok.end[1]]
            return head
    raise ApplyError(f"line {fn.lineno}: cannot read the signature of {fn.name}")


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _import_line(a: Analysis) -> int:
    """Line index just after the file's leading imports (before its first definition)."""
    at = 0
    if a.body and _is_docstring(a.body[0]):
        at = a.body[0].end_lineno or 0
    for stmt in a.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) or (
            isinstance(stmt, (ast.Try, ast.If))
            and all(
                isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass, ast.Assign, ast.Expr))
                for s in ast.walk(stmt)
                if isinstance(s, ast.stmt) and s is not stmt
            )
        ):
            at = stmt.end_lineno or 0
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
    return at
