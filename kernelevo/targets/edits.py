"""Multi-file edits that land entirely or not at all.

A user's working tree must never be left half-changed: every file is checked against the
text the plan was made from, written to a temporary file beside it, then renamed into
place; if any step fails, files already replaced get their old text back.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field

from kernelevo.atomic_write import temp_beside


class ApplyError(Exception):
    """The change cannot be made (safely); nothing was written. The message says why and what to do."""


@dataclass
class FileEdit:
    path: str
    old_text: str  # "" for a file the plan creates
    new_text: str


@dataclass
class ApplyPlan:
    files: list[FileEdit]
    diff: str
    target_id: str = ""
    kernel_module: str = ""
    test_path: str = ""
    notes: list[str] = field(default_factory=list)


def diff_of(files: list[FileEdit]) -> str:
    """A unified diff of all files (new files from /dev/null), as `git apply` reads it."""
    out: list[str] = []
    for f in files:
        rel = os.path.relpath(f.path)
        name = (f.path if rel.startswith("..") else rel).replace(os.sep, "/")
        old_name, new_name = (name, name) if name.startswith("/") else (f"a/{name}", f"b/{name}")
        out.extend(
            difflib.unified_diff(
                f.old_text.splitlines(keepends=True),
                f.new_text.splitlines(keepends=True),
                fromfile="/dev/null" if not f.old_text else old_name,
                tofile=new_name,
            )
        )
    return "".join(line if line.endswith("\n") else line + "\n" for line in out)


def write_plan(plan: ApplyPlan) -> None:
    """Write every file of the plan or none: refuse if any changed since planning, undo on failure."""
    for f in plan.files:
        current = _read(f.path)
        if f.old_text == "" and current is not None and current != f.new_text:
            raise ApplyError(
                f"{f.path}: already exists; move it away (an earlier apply?) and try again"
            )
        if f.old_text != "" and current != f.old_text:
            raise ApplyError(
                f"{f.path}: changed since the change was planned; nothing written, plan again"
            )
    temps: list[str] = []
    done: list[FileEdit] = []
    try:
        for f in plan.files:
            temps.append(_temp_with(f.path, f.new_text))
        for f, tmp in zip(plan.files, temps, strict=True):
            os.replace(tmp, f.path)
            done.append(f)
    except BaseException:
        for f in reversed(done):
            try:
                if f.old_text == "":
                    os.unlink(f.path)
                else:
                    os.replace(_temp_with(f.path, f.old_text), f.path)
            except OSError:
                pass
        for tmp in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise


def _read(path: str) -> str | None:
    try:  # bytes that are not UTF-8 make a text that differs from the plan's: refused, not a crash
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def _temp_with(path: str, text: str) -> str:
    # every file's temporary is written before any is renamed: all files of the plan or none
    return temp_beside(path, text, new_file_mode=0o644)
