"""Launch configurations a compiler offered for a kernel, kept as a comment line above it.

A candidate extracted from Inductor launches each kernel with one configuration (the one
Inductor's benchmark kept, or its first where no GPU ran the benchmark); the others it listed
are written above the kernel so that the parameter search can reach them (their values join
the tunables' choices, tunables.py) and, where no benchmark picked one, tries them first
(tune.py). Plain text: no torch here.
"""

from __future__ import annotations

import json
import re
from typing import Any

MARK = "# Inductor's launch configurations for this kernel:"
BENCHMARKED = "(launched with the one its benchmark kept on the task's inputs)"
_LINE = re.compile(rf"^{re.escape(MARK)} (\[.*?\])(?: {re.escape(BENCHMARKED)})?\s*$")


def listed_configs_comment(info: dict[str, Any]) -> str:
    """The comment line for a captured kernel (inductor_kernel_record.py's record), each
    configuration as {"XBLOCK": 8, "num_warps": 2, "num_stages": 1}; empty when it lists one."""
    configs = info.get("configs") or []
    if len(configs) < 2:
        return ""
    flat = [
        {**c["kwargs"], "num_warps": c["num_warps"], "num_stages": c["num_stages"]} for c in configs
    ]
    kept = f" {BENCHMARKED}" if isinstance(info.get("chosen"), dict) else ""
    return f"{MARK} {json.dumps(flat, separators=(',', ':'))}{kept}\n"


def parse_line(line: str) -> tuple[list[dict[str, int]], bool] | None:
    """(the configurations, whether a benchmark already picked among them) or None."""
    m = _LINE.match(line.strip())
    if m is None:
        return None
    try:
        configs = json.loads(m.group(1))
    except ValueError:
        return None
    if not isinstance(configs, list):
        return None
    clean = [
        {str(k): v for k, v in c.items() if type(v) is int} for c in configs if isinstance(c, dict)
    ]
    return clean, line.rstrip().endswith(BENCHMARKED)


def listed_above(lines: list[str], first_line: int) -> tuple[list[dict[str, int]], bool] | None:
    """The listing on the line right above a kernel whose first line (its decorator, 1-based)
    is first_line."""
    if first_line < 2 or first_line - 2 >= len(lines):
        return None
    return parse_line(lines[first_line - 2])


def listings(source: str, tree: Any = None) -> dict[str, tuple[list[dict[str, int]], bool]]:
    """Per function of the source with a listing above it, that listing (`tree`: the source
    already parsed, when the caller has it)."""
    import ast

    lines = source.splitlines()
    out = {}
    for node in ast.walk(tree if tree is not None else ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            found = listed_above(lines, first)
            if found is not None and found[0]:
                out[node.name] = found
    return out


def listed_trials(source: str, names: set[str]) -> list[dict[str, int]]:
    """Inductor's listed configurations as configurations of the tunables named `names`
    ("kernel.XBLOCK@L12", tunables.py), one per listed index (kernels vary together, a kernel
    with fewer configurations keeps its last), for the kernels whose launch no benchmark
    picked: the first configurations the parameter search should try."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    listed = {k: v[0] for k, v in listings(source, tree).items() if not v[1]}
    if not listed:
        return []
    trials: list[dict[str, int]] = [{} for _ in range(max(len(c) for c in listed.values()))]
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
            continue
        kernel = ast.unparse(node.func.value).split(".")[-1]
        for i, trial in enumerate(trials):
            configs = listed.get(kernel)
            if not configs:
                break
            for param, value in configs[min(i, len(configs) - 1)].items():
                name = f"{kernel}.{param}@L{node.lineno}"
                if name in names:
                    trial[name] = value
    return [t for t in trials if t]
