"""A file the user named, read as UTF-8 text: one line that says what is wrong, and what to do.

Checked before opening: a FIFO blocks an open until someone writes to it, and a folder or a
device is no source file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class TextFileError(ValueError):
    """The file cannot be read as text; the message names it and says what to do."""


def file_problem(path: str | Path, missing: str = "no such file") -> str | None:
    """Why `path` is not a regular file, as one line naming it (`missing` when it is not there);
    None when it is one."""
    if str(path) == "":
        return f"'' (an empty path): {missing}"
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"{path}: {missing}"
    except OSError as exc:
        return f"{path}: cannot read ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        return f"{path} is a folder, not a file"
    if not stat.S_ISREG(mode):
        return f"{path} is not a regular file (a FIFO, socket or device); give a file"
    return None


def read_text(path: str | Path, missing: str = "no such file", keep_newlines: bool = False) -> str:
    """The file's text, decoded as UTF-8 (newlines made `\\n` unless `keep_newlines`); raises
    TextFileError for a missing or non-regular file, one that cannot be read, or one not UTF-8."""
    problem = file_problem(path, missing)
    if problem:
        raise TextFileError(problem)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TextFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TextFileError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); save it as UTF-8"
        ) from None
    return text if keep_newlines else text.replace("\r\n", "\n").replace("\r", "\n")
