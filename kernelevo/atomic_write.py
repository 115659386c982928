"""A file replaced whole or not at all: written to a temporary file beside it, flushed to disk,
then renamed over it.

A reader (the editor, another KernelEvo process, the next run after a crash) sees the old
file or the new one, never half of one, and a write that fails leaves the old file as it was.
The new file keeps the old one's permission bits, as writing the file in place would. Standard
library only: the language server uses it and never imports torch.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def temp_beside(path: str | Path, data: str | bytes, new_file_mode: int | None = None) -> str:
    """A temporary file in `path`'s folder holding `data` (text as UTF-8, newlines untouched),
    on disk, with `path`'s mode (or `new_file_mode`, or what `open` gives a new file where `path`
    does not exist); the caller renames it over `path` with `os.replace`, or deletes it."""
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    try:
        mode: int | None = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = new_file_mode
    blob = data.encode("utf-8") if isinstance(data, str) else data
    while True:
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
        try:  # 0o666 less the umask, like open(); O_EXCL: never another writer's file
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def write_atomic(path: str | Path, data: str | bytes, new_file_mode: int | None = None) -> None:
    """Replace `path` by `data` whole (see `temp_beside` for the mode); on any failure `path` is
    as it was and no temporary file is left."""
    tmp = temp_beside(path, data, new_file_mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
