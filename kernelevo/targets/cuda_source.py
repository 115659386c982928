"""CUDA C++ found without a compiler: `__global__` kernels in .cu files and in Python strings.

A lexical scan is enough for ranges and names; the compiler has the final word later.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kernelevo.targets.imports import resolve_expr

_GLOBAL = re.compile(r"__global__\b")
_NAME_BEFORE_PAREN = re.compile(r"(\w+)\s*(?:<[^;{()]*>)?\s*\($")
_PREFIX = re.compile(r'(template\s*<[^;{]*>\s*|extern\s+"C"\s*)+$')

# Python callables that compile CUDA C++ given as text, and where the text goes.
LOADERS: dict[str, tuple[int, tuple[str, ...]]] = {
    "torch.utils.cpp_extension.load_inline": (2, ("cuda_sources",)),
    "pycuda.compiler.SourceModule": (0, ("source",)),
    "cupy.RawKernel": (0, ("code",)),
    "cupy.RawModule": (0, ("code",)),
    "cupy.cuda.RawKernel": (0, ("code",)),
    "cupy.cuda.RawModule": (0, ("code",)),
    "kernelevo.cuda.compile": (0, ("source",)),
}
FILE_SUFFIXES = (".cu", ".cuh")


@dataclass
class CudaKernel:
    name: str
    start: int  # character offsets into the text
    end: int


def kernels_in(text: str) -> list[CudaKernel]:
    """`__global__` functions with bodies; declarations (ending in `;`) are skipped."""
    found: list[CudaKernel] = []
    pos = 0
    while True:
        m = _GLOBAL.search(text, pos)
        if m is None:
            return found
        if _in_comment(text, m.start()):
            pos = m.end()
            continue
        paren = text.find("(", m.end())
        brace = text.find("{", m.end())
        semi = text.find(";", m.end())
        if paren < 0 or brace < 0 or (0 <= semi < brace):
            pos = m.end()
            continue
        name_m = _NAME_BEFORE_PAREN.search(text[m.end() : paren + 1])
        end = _match_brace(text, brace)
        start = m.start()
        pre = _PREFIX.search(text, 0, start)
        if pre is not None and pre.end() == start:
            start = pre.start()
        if name_m is not None and end > 0:
            found.append(CudaKernel(name_m.group(1), start, end))
        pos = max(end, m.end())


def _in_comment(text: str, at: int) -> bool:
    line_start = text.rfind("\n", 0, at) + 1
    if "//" in text[line_start:at]:
        return True
    opened = text.rfind("/*", 0, at)
    return opened >= 0 and text.rfind("*/", opened, at) < 0


def _match_brace(text: str, open_at: int) -> int:
    """Offset just past the brace matching text[open_at]; -1 if unbalanced."""
    depth = 0
    i = open_at
    n = len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            i = text.find("\n", i)
            if i < 0:
                return -1
        elif c == "/" and text.startswith("/*", i):
            i = text.find("*/", i + 2)
            if i < 0:
                return -1
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


@dataclass
class CudaSite:
    """One call that compiles CUDA text: where the text is and what to call it."""

    call: ast.Call
    loader: str
    strings: list[ast.expr]
    name: str | None
    owner: str | None = None  # qualname of the function the call is in, None at module level


def loader_of(call: ast.Call, aliases: dict[str, str]) -> str | None:
    full = resolve_expr(call.func, aliases)
    if full in LOADERS:
        return full
    if full and full.startswith("cupy.") and full.rsplit(".", 1)[-1] in ("RawKernel", "RawModule"):
        return "cupy." + full.rsplit(".", 1)[-1]
    return None


def source_arg(call: ast.Call, loader: str) -> ast.expr | None:
    position, keywords = LOADERS[loader]
    for kw in call.keywords:
        if kw.arg in keywords:
            return kw.value
    if len(call.args) > position:
        return call.args[position]
    return None


def string_nodes(
    expr: ast.expr | None,
    off: int,
    local_values: dict[str, ast.expr],
    local_off: int,
    module_values: dict[str, tuple[ast.expr, int]],
    depth: int = 0,
) -> list[tuple[ast.expr, int]]:
    """The string literals an expression is built from (through names, lists, `+`, `.join`, dedent),
    each with the line offset of the chunk it is in."""
    if expr is None or depth > 6:
        return []

    def more(e: ast.expr, o: int = off) -> list[tuple[ast.expr, int]]:
        return string_nodes(e, o, local_values, local_off, module_values, depth + 1)

    if (isinstance(expr, ast.Constant) and isinstance(expr.value, str)) or isinstance(
        expr, ast.JoinedStr
    ):
        return [(expr, off)]
    if isinstance(expr, (ast.List, ast.Tuple)):
        return [s for e in expr.elts for s in more(e)]
    if isinstance(expr, ast.BinOp):
        return more(expr.left) + more(expr.right)
    if isinstance(expr, ast.Call):
        return [s for a in expr.args for s in more(a)]
    if isinstance(expr, ast.Name):
        if expr.id in local_values:
            return more(local_values[expr.id], local_off)
        if expr.id in module_values:
            value, value_off = module_values[expr.id]
            return more(value, value_off)
    return []


def site_name(call: ast.Call, loader: str, strings: list[ast.expr], text_of) -> str | None:
    """A stable, meaningful name: the extension's or kernel's own name, else the first kernel's."""
    if loader.endswith("load_inline"):
        for kw in call.keywords:
            if (
                kw.arg == "name"
                and isinstance(kw.value, ast.Constant)
                and isinstance(kw.value.value, str)
            ):
                return kw.value.value
        if (
            call.args
            and isinstance(call.args[0], ast.Constant)
            and isinstance(call.args[0].value, str)
        ):
            return call.args[0].value
    if loader.endswith("RawKernel"):
        for kw in call.keywords:
            if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                return str(kw.value.value)
        if len(call.args) > 1 and isinstance(call.args[1], ast.Constant):
            return str(call.args[1].value)
    for s in strings:
        text = text_of(s)
        ks = kernels_in(text)
        if ks:
            return ks[0].name
    return None
