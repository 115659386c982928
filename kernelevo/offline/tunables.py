"""Launch and tile parameters of a candidate that can be varied without changing its meaning.

Found statically (no torch, no triton): Triton launch keyword arguments with literal
values (`BLOCK_SIZE=1024`, `num_warps=4`, `num_stages=2`, also through a variable
assigned once, `BLOCK = 256`), `@triton.autotune` configs (stripped by picking one),
CUDA `#define NAME <int>`, `constexpr int NAME = <int>;`, template instantiation constants
(`kernel<128><<<...>>>`) and Python-side `block=(256, 1, 1)` sizes; a kernel's choices include
the configurations a compiler listed above it (listed_configs.py). A value is only
rewritten in place, so the search's best configuration is a plain source file.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from kernelevo.offline.listed_configs import listings

TILE_NAME = re.compile(
    r"BLOCK|TILE|GROUP|SPLIT|CHUNK|VEC|UNROLL|PER_THREAD|PER_PROGRAM|ROWS_PER|^B[MNK]$", re.I
)
WARPS = [1, 2, 4, 8, 16]
STAGES = [1, 2, 3, 4, 5]
TRITON_DEFAULT = {"num_warps": 4, "num_stages": 3}


@dataclass
class Tunable:
    name: str  # stable within one source, e.g. "softmax_kernel.BLOCK_SIZE@L40"
    kind: str  # "literal" (replace text) or "insert" (add a keyword argument)
    start: int  # character offsets in the source; start == end for "insert"
    end: int
    value: int
    choices: list[int] = field(default_factory=list)
    keyword: str = ""  # for "insert": the keyword to add
    needs_comma: bool = True


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def tile_choices(value: int, lo: int = 1, hi: int = 16384) -> list[int]:
    """Powers of two within 8x either way of the current value."""
    out = []
    c = 1
    while c <= hi:
        if lo <= c and value / 8 <= c <= value * 8:
            out.append(c)
        c *= 2
    return out


def _offsets(source: str) -> list[int]:
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _jit_kernels(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                text = ast.unparse(target)
                if text.endswith("jit") or text.endswith("autotune") or text.endswith("heuristics"):
                    out[node.name] = node
    return out


def _int_literal(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


class _Finder:
    def __init__(self, source: str) -> None:
        self.source = source
        self.tree = ast.parse(source)
        self.starts = _offsets(source)
        self.kernels = _jit_kernels(self.tree)
        self.found: dict[tuple[int, int, str], Tunable] = {}
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node

    def pos(self, line: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets
        text = self.source[self.starts[line - 1] : self.starts[line]]
        return self.starts[line - 1] + len(text.encode()[:col].decode(errors="ignore"))

    def span(self, node: ast.expr) -> tuple[int, int]:
        end_line, end_col = node.end_lineno, node.end_col_offset
        if end_line is None or end_col is None:  # parsed nodes have both
            end_line, end_col = node.lineno, node.col_offset
        return self.pos(node.lineno, node.col_offset), self.pos(end_line, end_col)

    def add(self, name: str, node: ast.expr, value: int, choices: list[int]) -> None:
        start, end = self.span(node)
        if len(choices) > 1 and (start, end, "") not in self.found:
            self.found[(start, end, "")] = Tunable(name, "literal", start, end, value, choices)

    def scope_assignment(self, call: ast.AST, var: str) -> ast.Constant | None:
        """The int literal a name is bound to, if it is assigned exactly once in its scope."""
        scope: ast.AST | None = self.parents.get(call)
        while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.Module)):
            scope = self.parents.get(scope)
        for where in ([scope] if scope is not None else []) + [self.tree]:
            assigns = [
                n
                for n in ast.walk(where)
                if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                and any(
                    isinstance(t, ast.Name) and t.id == var
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                )
            ]
            if where is not self.tree:
                assigns = [a for a in assigns if self._owner(a) is where]
            else:
                assigns = [a for a in assigns if self._owner(a) is self.tree]
            if len(assigns) == 1 and isinstance(assigns[0], (ast.Assign, ast.AnnAssign)):
                value = assigns[0].value
                if value is not None and _int_literal(value) is not None:
                    return value  # type: ignore[return-value]
                return None
            if assigns:
                return None
        return None

    def _owner(self, node: ast.AST) -> ast.AST | None:
        scope = self.parents.get(node)
        while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.Module)):
            scope = self.parents.get(scope)
        return scope

    def launches(self) -> None:
        listed = {k: configs for k, (configs, _) in listings(self.source).items()}
        for node in ast.walk(self.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
                continue
            kernel = ast.unparse(node.func.value).split(".")[-1]
            if kernel not in self.kernels or any(
                ast.unparse(d.func if isinstance(d, ast.Call) else d).endswith("autotune")
                for d in self.kernels[kernel].decorator_list
            ):
                continue
            params = {a.arg: a for a in self.kernels[kernel].args.args}
            present = set()
            for kw in node.keywords:
                if kw.arg is None:
                    present.add("**")
                    continue
                present.add(kw.arg)
                if kw.arg in TRITON_DEFAULT:
                    choices = WARPS if kw.arg == "num_warps" else STAGES
                elif kw.arg in params and TILE_NAME.search(kw.arg):
                    choices = []
                else:
                    continue
                literal: ast.expr | None = kw.value
                value = _int_literal(kw.value)
                label = f"{kernel}.{kw.arg}@L{node.lineno}"
                if value is None and isinstance(kw.value, ast.Name):
                    literal = self.scope_assignment(node, kw.value.id)
                    value = _int_literal(literal) if literal is not None else None
                    label = f"{kw.value.id}@L{getattr(literal, 'lineno', node.lineno)}"
                if (
                    value is None
                    or literal is None
                    or (kw.arg != "num_stages" and not _pow2(value))
                ):
                    continue
                offered = {c[kw.arg] for c in listed.get(kernel, []) if _pow2(c.get(kw.arg, 0))}
                choices = sorted(set(choices or tile_choices(value)) | offered)
                self.add(label, literal, value, choices)
            if "**" in present:
                continue
            closing = self.pos(node.end_lineno, node.end_col_offset) - 1  # type: ignore[arg-type]
            before = self.source[:closing].rstrip()
            for kw_name, default in TRITON_DEFAULT.items():
                if kw_name not in present:
                    choices = WARPS if kw_name == "num_warps" else STAGES
                    key = (closing, closing, kw_name)
                    self.found[key] = Tunable(
                        f"{kernel}.{kw_name}@L{node.lineno}",
                        "insert",
                        closing,
                        closing,
                        default,
                        choices,
                        keyword=kw_name,
                        needs_comma=not (before.endswith(",") or before.endswith("(")),
                    )

    def cuda(self) -> None:
        patterns = [
            (r"^[ \t]*#define[ \t]+(\w+)[ \t]+(\d+)[ \t]*$", re.M),
            (
                r"\b(?:constexpr|const)\s+(?:int|unsigned|int32_t|size_t|long)\s+(\w+)\s*=\s*(\d+)\s*;",
                0,
            ),
        ]
        for pattern, flags in patterns:
            for m in re.finditer(pattern, self.source, flags):
                name, value = m.group(1), int(m.group(2))
                tile = (
                    TILE_NAME.search(name) or "THREADS" in name.upper() or "WARPS" in name.upper()
                )
                if tile and _pow2(value):
                    start, end = m.span(2)
                    self.found.setdefault(
                        (start, end, ""),
                        Tunable(
                            f"{name}@L{self.source.count(chr(10), 0, start) + 1}",
                            "literal",
                            start,
                            end,
                            value,
                            tile_choices(value, hi=1024 if "THREADS" in name.upper() else 16384),
                        ),
                    )
        for m in re.finditer(r"\b(\w+)<([\d\s,]+)>\s*<<<", self.source):
            base = m.start(2)
            for num in re.finditer(r"\d+", m.group(2)):
                value = int(num.group(0))
                if _pow2(value):
                    start, end = base + num.start(), base + num.end()
                    self.found.setdefault(
                        (start, end, ""),
                        Tunable(
                            f"{m.group(1)}<{value}>@L{self.source.count(chr(10), 0, start) + 1}",
                            "literal",
                            start,
                            end,
                            value,
                            tile_choices(value),
                        ),
                    )
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg == "block" and isinstance(kw.value, ast.Tuple) and kw.value.elts:
                        first = kw.value.elts[0]
                        threads = _int_literal(first)
                        if threads is not None and _pow2(threads):
                            self.add(
                                f"block.x@L{node.lineno}",
                                first,
                                threads,
                                tile_choices(threads, hi=1024),
                            )


def find_tunables(source: str) -> list[Tunable]:
    """Tunables in source order. A source that does not parse has none."""
    try:
        finder = _Finder(source)
    except SyntaxError:
        return []
    finder.launches()
    finder.cuda()
    return sorted(finder.found.values(), key=lambda t: (t.start, t.keyword))


def apply_config(source: str, tunables: list[Tunable], config: dict[str, int]) -> str:
    """Source with each named tunable set to its value in config (others unchanged)."""
    edits: list[tuple[int, int, str]] = []
    inserts: dict[int, list[Tunable]] = {}
    for t in tunables:
        value = config.get(t.name, t.value)
        if value == t.value:
            continue
        if t.kind == "literal":
            edits.append((t.start, t.end, str(value)))
        else:
            inserts.setdefault(t.start, []).append(t)
    for at, group in inserts.items():
        text = ", ".join(
            f"{t.keyword}={config[t.name]}" for t in sorted(group, key=lambda t: t.keyword)
        )
        edits.append((at, at, (", " if group[0].needs_comma else "") + text))
    return _edit(source, edits)


def _edit(source: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        source = source[:start] + text + source[end:]
    return source


@dataclass
class AutotuneConfig:
    kwargs: dict[str, int]
    num_warps: int = 4
    num_stages: int = 3


def _autotune_configs(dec: ast.Call) -> list[AutotuneConfig] | None:
    node = next(
        (k.value for k in dec.keywords if k.arg == "configs"), dec.args[0] if dec.args else None
    )
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    out = []
    for item in node.elts:
        if not (isinstance(item, ast.Call) and ast.unparse(item.func).endswith("Config")):
            return None
        kw_node = (
            item.args[0]
            if item.args
            else next((k.value for k in item.keywords if k.arg == "kwargs"), None)
        )
        try:
            kwargs = ast.literal_eval(kw_node) if kw_node is not None else {}
            extra = {
                k.arg: ast.literal_eval(k.value)
                for k in item.keywords
                if k.arg in ("num_warps", "num_stages")
            }
        except ValueError:
            return None
        out.append(
            AutotuneConfig(dict(kwargs), extra.get("num_warps", 4), extra.get("num_stages", 3))
        )
    return out


def autotune_variants(source: str) -> list[tuple[str, str]] | None:
    """One source per config of the file's @triton.autotune decorators, each with the decorator
    removed and its config written into the kernel's launches. [] when the file has no autotune;
    None when its configs are not literal (built at run time), so they cannot be written back."""
    tree = ast.parse(source)
    finder = _Finder(source)
    per_kernel: list[tuple[str, ast.Call, list[AutotuneConfig]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and ast.unparse(dec.func).endswith("autotune"):
                    configs = _autotune_configs(dec)
                    if not configs:
                        return None
                    per_kernel.append((node.name, dec, configs))
    if not per_kernel:
        return []
    launches: dict[str, list[ast.Call]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            launches.setdefault(ast.unparse(node.func.value).split(".")[-1], []).append(node)
    # kernels vary together by config index (a file rarely has more than one autotuned kernel)
    count = max(len(c) for _, _, c in per_kernel)
    variants = []
    for i in range(count):
        edits: list[tuple[int, int, str]] = []
        labels = []
        for kernel, dec, configs in per_kernel:
            cfg = configs[min(i, len(configs) - 1)]
            line_start = finder.starts[dec.lineno - 1]
            line_end = finder.starts[dec.end_lineno]  # type: ignore[index]
            edits.append((line_start, line_end, ""))
            values = {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
            labels.append(f"{kernel}: " + ", ".join(f"{k}={v}" for k, v in values.items()))
            for call in launches.get(kernel, []):
                given = {k.arg for k in call.keywords}
                text = ", ".join(f"{k}={v!r}" for k, v in values.items() if k not in given)
                if not text:
                    continue
                closing = finder.pos(call.end_lineno, call.end_col_offset) - 1  # type: ignore[arg-type]
                before = source[:closing].rstrip()
                comma = " " if before.endswith(",") else "" if before.endswith("(") else ", "
                edits.append((closing, closing, comma + text))
        variants.append(("; ".join(labels), _edit(source, edits)))
    return variants
