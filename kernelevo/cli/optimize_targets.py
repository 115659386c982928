"""What `kernelevo optimize TARGET` searches: a task file, a folder of them, or FILE::NAME.

A target in ordinary code is built into a task (or the one built before is reused when its
code is unchanged); with --all every target of a file or folder is, and those that cannot be
built are reported with the reason instead of stopping the others.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kernelevo.cli import UserError
from kernelevo.text_file import file_problem


def _tasks(target: str, script: str | None = None) -> list[tuple[Path, dict[str, str]]]:
    if "::" in target:
        file, name = target.rsplit("::", 1)
        return [_build_target(file, name, script=script)]
    path = Path(target)
    if path.is_dir():
        tasks = sorted(p for p in path.glob("*.py") if not p.name.startswith("_") and p.is_file())
        if not tasks:
            raise UserError(f"{path}: no task files (*.py) in this folder")
        return [(p, {}) for p in tasks]
    # before any read: opening a FIFO waits for a writer
    problem = file_problem(path, "no such file; give a task file, a folder of tasks or FILE::NAME")
    if problem:
        raise UserError(problem)
    problem = _task_problem(path)
    if problem and _user_targets(path):
        raise UserError(
            f"{path}: not a task file; give one target (FILE::NAME, see `kernelevo detect {path}`) "
            "or search them all with --all"
        )
    if problem:
        hint = (
            "" if "get_inputs" in problem else "; a task file defines class Model and get_inputs()"
        )
        raise UserError(problem + hint)
    return [(path, {})]


def _task_problem(path: Path) -> str | None:
    from kernelevo.task import TaskError, read_task

    try:
        read_task(path)
        return None
    except TaskError as exc:
        return str(exc)


def _user_targets(path: Path) -> list[Any]:
    from kernelevo.targets.detect import detect_file

    return list(detect_file(str(path)).targets)


def _build_target(
    file: str, name: str, script: str | None = None, quiet: bool = False
) -> tuple[Path, dict[str, str]]:
    """A task for a target in ordinary code (the one built before when its code is unchanged and
    no --script asks for new inputs), and where it came from."""
    from kernelevo.targets.extract import ExtractError, build_task
    from kernelevo.targets.task_origin import reusable_task

    problem = file_problem(file) or (script and file_problem(script, "no such script"))
    if problem:
        raise UserError(problem)
    found = reusable_task(file, name) if script is None else None
    if found is not None:
        path, target = found
        if not quiet:
            from kernelevo.targets.task_origin import task_origin

            sizes = task_origin(path).get("CPU sizes")
            print(
                f"kernelevo: reusing the task built before: {path} (same code; `kernelevo task {file}::{name}` "
                "rebuilds it)" + (f"; CPU sizes {sizes}" if sizes else ""),
                file=sys.stderr,
            )
        return Path(path), {
            "source_file": str(Path(file).resolve()),
            "target_id": target.id,
            "source_hash": target.source_hash,
        }
    if not quiet:
        print(
            f"kernelevo: building the task for {file}::{name} (finding example inputs)...",
            file=sys.stderr,
            flush=True,
        )
    try:
        built = build_task(file, name, script=script)
    except ExtractError as exc:
        raise UserError(str(exc)) from exc
    assert built.path is not None
    if not quiet:
        print(f"kernelevo: task {built.path}; example inputs {built.inputs}", file=sys.stderr)
    return Path(built.path), {
        "source_file": str(Path(file).resolve()),
        "target_id": built.target.id,
        "source_hash": built.target.source_hash,
    }


def _all_targets(target: str) -> tuple[list[tuple[Path, dict[str, str]]], list[str]]:
    """Every target under TARGET (task files as they are, targets in ordinary code built into
    tasks) and, for those that could not be built, why."""
    if "::" in target:
        file, name = target.rsplit("::", 1)
        return [_build_target(file, name)], []
    path = Path(target)
    problem = None if path.is_dir() else file_problem(path, "no such file or folder")
    if problem:
        raise UserError(problem)
    files = (
        sorted(p for p in path.glob("*.py") if not p.name.startswith("_") and p.is_file())
        if path.is_dir()
        else [path]
    )
    found: list[tuple[Path, dict[str, str]]] = []
    skipped: list[str] = []
    for f in files:
        if _task_problem(f) is None:
            found.append((f, {}))
            continue
        for t in _user_targets(f):
            try:
                found.append(_build_target(str(f), t.id, quiet=True))
            except UserError as exc:
                skipped.append(str(exc))
    if not found:
        raise UserError(
            f"{path}: no target could be searched" + (f" ({skipped[0]})" if skipped else "")
        )
    return found, skipped
