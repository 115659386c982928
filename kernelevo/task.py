"""A KernelBench-format task: checked statically here, loaded for real only inside a worker.

The static side (no torch) gives users one-line errors naming file and line before
any process starts; `load_task_module` is what the worker calls.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from kernelevo.ast_names import parse_module
from kernelevo.digest import text_hash
from kernelevo.text_file import TextFileError, read_text

T = TypeVar("T")


class TaskError(Exception):
    """The task file is unusable; the message names the file (and line) and what to do."""


@dataclass
class TaskFile:
    path: Path
    source: str
    hash: str
    hints: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.stem


def read_task(path: str | Path) -> TaskFile:
    """Read and statically check a task file; raises TaskError with file:line on problems."""
    p = Path(path)
    if p.is_dir():
        raise TaskError(
            f"{p}: is a folder; give a task .py file (or use a command that accepts folders)"
        )
    try:
        source = read_text(
            p,
            "no such task file (give a KernelBench-format .py file with class Model and get_inputs())",
        )
    except TextFileError as exc:
        raise TaskError(str(exc)) from exc
    try:
        tree = parse_module(source, filename=str(p))  # one thread at a time (CPython 3.11)
    except SyntaxError as exc:
        raise TaskError(f"{p}:{exc.lineno}: syntax error: {exc.msg}") from exc
    names = {n.name: n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    if not isinstance(names.get("Model"), ast.ClassDef):
        raise TaskError(
            f"{p}:1: no top-level `class Model(nn.Module)`; a task defines Model, get_inputs() and get_init_inputs()"
        )
    for fn in ("get_inputs", "get_init_inputs"):
        if not isinstance(names.get(fn), ast.FunctionDef):
            raise TaskError(
                f"{p}:1: no top-level `def {fn}()`; a task defines Model, get_inputs() and get_init_inputs()"
            )
    return TaskFile(
        path=p.resolve(), source=source, hash=text_hash(source), hints=_literal_hints(tree)
    )


def _literal_hints(tree: ast.Module) -> dict[str, Any]:
    """Hints that are plain literals (read without running the file)."""
    hints: dict[str, Any] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            name = node.targets[0].id
            if name in (
                "TOLERANCE",
                "ALLOWED_LIBRARY_OPS",
                "VERIFY_SEEDS",
                "STRICT",
                "ALLOW_TF32",
                "ALLOW_BF16",
                "ALLOW_FP16",
            ):
                with contextlib.suppress(ValueError):
                    hints[name] = ast.literal_eval(node.value)
            elif name == "SMALL":
                hints["SMALL"] = True
        elif isinstance(node, ast.FunctionDef) and node.name == "get_extra_inputs":
            hints["get_extra_inputs"] = True
    return hints


_counter = 0


def import_file(path: str | Path, prefix: str) -> ModuleType:
    """Import a .py file under a fresh module name (Triton reads kernel source from the file)."""
    global _counter
    _counter += 1
    name = f"_kernelevo_{prefix}_{_counter}"
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def task_location(exc: BaseException, path: str | Path) -> str:
    """`path:line` of the task's own frame nearest the exception (the path alone when none is)."""
    import os
    import traceback

    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if os.path.realpath(frame.filename) == os.path.realpath(path):
            return f"{path}:{frame.lineno}"
    return str(path)


def task_step(path: str | Path, what: str, step: Callable[[], T], fault: type[Exception]) -> T:
    """One of the task's own steps (get_inputs(), Model(), its forward...): a failure there is
    the task's, raised as `fault` saying `path:line: what raised Type: message`. SystemExit from
    the user's code is the task's fault too; a `fault` already raised passes through."""
    try:
        return step()
    except fault:
        raise
    except BaseException as exc:
        raise fault(
            f"{task_location(exc, path)}: {what} raised {type(exc).__name__}: {exc}"
        ) from exc


def load_task_module(path: str | Path, size: str = "default") -> ModuleType:
    """Import the task; with size 'small', apply its SMALL overrides to the module globals."""
    module = import_file(path, "task")
    if size == "small":
        small = getattr(module, "SMALL", None)
        if small is None:
            raise TaskError(
                f"{path}:1: size 'small' asked for but the task has no SMALL = {{...}} overrides"
            )
        module.__dict__.update(small)
    return module
