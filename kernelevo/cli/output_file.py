"""A file the user names for a command's output (`-o`, `--json-out`): checked before the work
starts, so a typo costs a one-line error instead of a finished search's summary, and never a
folder or someone else's file replaced by accident."""

from __future__ import annotations

from pathlib import Path

from kernelevo.cli import UserError


def check(out: Path, flag: str) -> None:
    """Refuse now what `write` would fail on later: a folder, or a place that cannot be written."""
    if out.is_dir():
        raise UserError(f"{out}: is a folder; {flag} names the file to write")
    if not out.parent.is_dir():
        raise UserError(f"{out}: no folder {out.parent}; {flag} names a file in an existing folder")


def write(out: Path, text: str, flag: str) -> None:
    check(out, flag)
    try:
        out.write_text(text)
    except OSError as exc:
        raise UserError(
            f"{out}: cannot write ({exc.strerror or exc}); {flag} names another file"
        ) from exc
