"""`kernelevo task FILE::NAME [--script S] [--out DIR]`: build a task from a target and check it runs."""

from __future__ import annotations

import argparse

from kernelevo.cli import UserError, seconds
from kernelevo.text_file import file_problem


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "task", help="extract a target from your code into a KernelBench-format task"
    )
    p.add_argument(
        "spec",
        metavar="FILE::NAME",
        help="file and target (name, qualname or id, see `kernelevo detect`)",
    )
    p.add_argument(
        "--script",
        help="a script that calls the target; its shapes and dtypes become the example inputs",
    )
    p.add_argument(
        "--out", help="folder for the task file (default .kernelevo/tasks in the working folder)"
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        default=300.0,
        help="seconds allowed for the script and for the check",
    )
    p.add_argument("--no-check", action="store_true", help="write the task without running it once")
    p.set_defaults(handler=run)


def split_spec(spec: str) -> tuple[str, str]:
    path, sep, name = spec.rpartition("::")  # a folder may hold "::"; a name never does
    if not sep or not path or not name:
        raise UserError(
            f"{spec or repr(spec)}: expected FILE::NAME, e.g. model.py::RMSNorm (see `kernelevo detect FILE`)"
        )
    return path, name


def run(args: argparse.Namespace) -> int:
    from kernelevo.targets.extract import ExtractError, build_task, check_task

    path, name = split_spec(args.spec)
    problem = file_problem(path)
    if problem:
        raise UserError(problem)
    try:
        built = build_task(path, name, script=args.script, out_dir=args.out, timeout=args.timeout)
    except ExtractError as exc:
        raise UserError(str(exc)) from exc
    print(f"task: {built.path}")
    print(f"  reference {built.reference} ({built.target.id}); example inputs: {built.inputs}")
    if args.no_check:
        return 0
    assert built.path is not None  # build_task writes the file or raises
    check = built.small_check
    if check is None or check.ok is not True or check.detail.get("device") != "cpu":
        check = check_task(built.path, timeout=args.timeout)  # on a CPU, the small run was this one
    label = {True: "ok", False: "FAILED", None: "not checked"}[check.ok]
    print(f"check {label} ({check.elapsed_s:.1f} s): {check.message}")
    for w in check.detail.get("warnings", []):
        print(f"  warning: {w}")
    return 1 if check.ok is False else 0
