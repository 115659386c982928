"""`kernelevo detect FILE... [--json]`: list what KernelEvo can optimise in files."""

from __future__ import annotations

import argparse
import ast
import json
import os
import shlex
import sys

from kernelevo.cli import UserError
from kernelevo.text_file import file_problem


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "detect", help="list optimisation targets (modules, functions, kernels) in files"
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="Python, .cu or .cuh files")
    p.add_argument(
        "--json", action="store_true", help="print a JSON list of detections (one per file)"
    )
    p.set_defaults(handler=run)


_SOURCE_SUFFIXES = (".py", ".pyi", ".cu", ".cuh")


def run(args: argparse.Namespace) -> int:
    from kernelevo.targets.detect import detect_file

    for path in args.files:
        if os.path.isdir(path):
            raise UserError(f"{path}: is a folder; give .py or .cu files")
        problem = file_problem(path)  # before any read: opening a FIFO waits for a writer
        if problem:
            raise UserError(problem)
        if not path.endswith(_SOURCE_SUFFIXES):
            raise UserError(
                f"{path}: not a Python or CUDA file (.py, .cu, .cuh); detect reads source code only"
            )
    detections = [detect_file(path) for path in args.files]
    for d in detections:
        if not d.targets and not d.errors and d.path.endswith((".py", ".pyi")):
            d.errors += _syntax_errors(d.path)
    broken = any(d.errors for d in detections)
    if args.json:
        print(json.dumps([d.to_dict() for d in detections], indent=1))
        return 1 if broken else 0
    for d in detections:
        for err in d.errors:
            print(f"{err} (targets in the rest of the file are still listed)", file=sys.stderr)
        if not d.targets:
            print(f"{d.path}: no targets found")
        for t in d.targets:
            ops = ", ".join(t.ops[:6]) + (" ..." if len(t.ops) > 6 else "")
            print(
                f"{t.path}:{t.start_line + 1}-{t.end_line + 1}  {t.kind:<15} {t.qualname:<28} {t.id}"
                + (f"  [{ops}]" if ops else "")
            )
    found = [
        (d.path, t)
        for d in detections
        for t in d.targets
        if t.kind in ("module", "function", "triton_launcher")
    ]
    if found:
        path, t = found[0]
        spec = shlex.quote(f"{path}::{t.qualname}")  # pasted into a shell as it is printed
        print(
            f"next: `kernelevo task {spec}` builds its task, "
            f"`kernelevo optimize {spec}` searches for a faster kernel"
        )
    if broken:
        print(
            "kernelevo: the file has syntax errors (listed above); fix them to see every target",
            file=sys.stderr,
        )
    return 1 if broken else 0


def _syntax_errors(path: str) -> list[str]:
    """A file without targets may not have been parsed (detection skips files that name no
    torch or Triton); a syntax error there is still the user's to hear about, not "no targets
    found". Only the CLI asks, once per such file; the language server does not."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            compile(fh.read(), path, "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)
    except SyntaxError as exc:
        return [f"{path}:{exc.lineno or 1}: {exc.msg}"]
    except (OSError, ValueError):  # unreadable, or a NUL byte: not Python source
        return [f"{path}: not Python source that can be parsed"]
    return []
