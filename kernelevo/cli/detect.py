"""`kernelevo detect FILE... [--json]`: list what KernelEvo can optimise in files."""

from __future__ import annotations

import argparse
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
