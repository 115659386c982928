"""Which hand-written templates fit a task, detected from its traced ATen graph.

The reference is traced in a child process (graph_trace.py: make_fx on fake tensors);
matching and code generation are plain Python over that JSON. With `check`, the
generated candidates are run against the reference on the task's small inputs (Triton
interpreter, another child) and the ones that disagree are dropped, with the reason kept.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelevo.offline.templates import TEMPLATES
from kernelevo.offline.templates.common import Graph, Unsupported
from kernelevo.task import TaskError

__all__ = ["Instantiation", "instantiate", "instantiate_report", "match_graph", "trace_graph"]

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Instantiation:
    candidates: list[tuple[str, str]] = field(default_factory=list)  # (template name, source)
    matched: list[str] = field(default_factory=list)  # template families whose pattern matched
    rejected: dict[str, str] = field(default_factory=dict)  # candidate name -> why it was dropped
    note: str = ""


def _child(args: list[str], timeout_s: float, interpret: bool = False) -> dict[str, Any]:
    env = dict(os.environ)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    out = Path(args[-1])
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "kernelevo.offline.graph_trace", *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            cwd=str(REPO),
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "reason": f"timed out after {timeout_s:.0f} s"}
    if not out.exists():
        return {"ok": False, "reason": f"child exited {proc.returncode}: {proc.stderr[-1500:]}"}
    return json.loads(out.read_text())


def _has_small(task_path: str | Path) -> bool:
    from kernelevo.task import read_task

    return bool(read_task(task_path).hints.get("SMALL"))


def trace_graph(
    task_path: str | Path, *, size: str | None = None, timeout_s: float = 300.0
) -> dict[str, Any]:
    """The reference's ATen graph as JSON (see graph_trace.py); raises RuntimeError on failure."""
    size = size or ("small" if _has_small(task_path) else "default")
    with tempfile.TemporaryDirectory(prefix="kernelevo_trace_") as tmp:
        data = _child(
            ["trace", str(Path(task_path).resolve()), size, str(Path(tmp) / "graph.json")],
            timeout_s,
        )
    if data.get("gpu_only"):
        _refuse_gpu_only(task_path)
        raise RuntimeError(
            f"tracing the reference stopped at its own GPU code ({data['gpu_only']}): templates "
            "start from a reference written in PyTorch ops"
        )
    if data.get("task_fault"):
        raise TaskError(
            f"{data['task_fault']}: the task fails on its own, before any candidate runs; fix it"
        )
    if not data.get("ok") and not data.get("no_template"):
        raise RuntimeError(f"tracing the reference failed: {data.get('reason')}")
    return data


def _refuse_gpu_only(task_path: str | Path) -> None:
    """Tracing stopped at GPU code on a machine without a GPU: when the reference cannot run here
    either (Triton's interpreter runs some launches), no search can, and the user is told so."""
    from kernelevo.targets.extract import check_task

    check = check_task(str(task_path), timeout=120.0)
    if check.ok is None and check.detail.get("gpu_only"):
        raise TaskError(
            f"{task_path}: the reference runs GPU code ({check.detail['gpu_only']}) and this "
            "machine has no CUDA GPU; search it on a machine with one"
        )


def match_graph(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(template module name, match parameters) for every template whose pattern the graph has."""
    graph = Graph(data)
    found = []
    for module in TEMPLATES:
        try:
            params = module.match(graph)
        except Exception:  # a graph a matcher did not foresee is a graph it does not match
            params = None
        if params is not None:
            found.append((module.__name__.rsplit(".", 1)[-1], params))
    return found


def generate_all(data: dict[str, Any]) -> Instantiation:
    graph = Graph(data)
    result = Instantiation()
    modules = {m.__name__.rsplit(".", 1)[-1]: m for m in TEMPLATES}
    for family, params in match_graph(data):
        result.matched.append(family)
        try:
            result.candidates += modules[family].generate(graph, params)
        except Unsupported as exc:
            result.rejected[family] = f"pattern matched but not generated: {exc}"
        except Exception as exc:  # a generator bug must not end the search
            result.rejected[family] = f"template generator failed: {type(exc).__name__}: {exc}"
    return result


QUIET_OPS = {
    "getitem",
    "view",
    "_unsafe_view",
    "reshape",
    "clone",
    "detach",
    "alias",
    "empty",
    "squeeze",
    "unsqueeze",
}


def compute_ops(data: dict[str, Any]) -> list[str]:
    """The graph's ops that do work (not views or copies), once each in order: what a reason names."""
    names: list[str] = []
    for node in data["nodes"]:
        name = node["target"].removeprefix("aten.").split(".")[0]
        if name not in QUIET_OPS and name not in names:
            names.append(name)
    return names


def instantiate_report(
    task_path: str | Path, *, check: bool = True, timeout_s: float = 300.0
) -> Instantiation:
    """Candidates from every matching template, with what was dropped and why."""
    small = _has_small(task_path)
    data = trace_graph(task_path, size="small" if small else "default", timeout_s=timeout_s)
    if data.get("no_template"):
        return Instantiation(note=f"no template for these inputs: {data['no_template']}")
    result = generate_all(data)
    if not result.matched:
        result.note = f"no template for {', '.join(compute_ops(data)) or 'this graph'}"
    if not check or not result.candidates:
        return result
    if not small:
        result.note = "not checked: the task has no SMALL sizes for the interpreter"
        return result
    with tempfile.TemporaryDirectory(prefix="kernelevo_templates_") as tmp:
        paths = {}
        for i, (name, source) in enumerate(result.candidates):
            path = Path(tmp) / f"{i}_{name}.py"
            path.write_text(source)
            paths[f"{i}:{name}"] = str(path)
        (Path(tmp) / "candidates.json").write_text(json.dumps(paths))
        data = _child(
            [
                "check",
                str(Path(task_path).resolve()),
                "small",
                str(Path(tmp) / "candidates.json"),
                str(Path(tmp) / "results.json"),
            ],
            timeout_s,
            interpret=True,
        )
    if not data.get("ok"):
        result.note = f"check failed to run: {data.get('reason')}"
        return result
    kept = []
    for i, (name, source) in enumerate(result.candidates):
        problem = data["results"].get(f"{i}:{name}")
        if problem is None:
            kept.append((name, source))
        else:
            result.rejected[name] = problem
    result.candidates = kept
    return result


def instantiate(
    task_path: str | Path, *, check: bool = True, timeout_s: float = 300.0
) -> list[tuple[str, str]]:
    """[(template name, candidate source)] for the templates that match the task."""
    return instantiate_report(task_path, check=check, timeout_s=timeout_s).candidates
