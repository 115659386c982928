"""Opening the store's SQLite file, and the boundary every write crosses.

Faults are the user's to fix, so each becomes one line that says what to do (`StoreError`)
and nothing already stored is lost: a damaged file is moved aside (never deleted) and a fresh
store started, a read-only store still answers reads, a full disk or a path past SQLite's
limit stops with the reason. Every text written is redacted first: a key that reached a
verdict (an exception a candidate raised, a server's echo) is masked before it is stored.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

SQLITE_MAX_PATH = 512  # the unix VFS's limit on a database path (SQLite's MAX_PATHNAME)
_WRITES = ("INSERT", "UPDATE", "REPLACE")


class StoreError(sqlite3.OperationalError):
    """The store cannot do what was asked; the message is one line saying what to do."""


class Fetched:
    """One statement's rows, read in full while the connection's lock was held, so no cursor of a
    shared connection is left open for another thread to trip over."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self.rows: list[Any] = cursor.fetchall()
        self.lastrowid = cursor.lastrowid
        self.rowcount = cursor.rowcount

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[Any]:
        return self.rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)


class RedactingConnection(sqlite3.Connection):
    """A connection whose writes are redacted, whose faults read as StoreError, and whose statements
    run one at a time: a search's evaluation threads share one Store, and two statements on one
    SQLite connection at once failed as "bad parameter or other API misuse" (H200, Python 3.12)."""

    store_path: Path = Path("store.sqlite")
    lock: threading.RLock

    def execute(self, sql: str, parameters: Any = (), /) -> Fetched:  # type: ignore[override]
        try:
            with self.lock:
                return Fetched(super().execute(sql, _redacted(sql, parameters)))
        except sqlite3.Error as exc:
            raise translate(exc, self.store_path) from exc

    def executemany(self, sql: str, seq: Any, /) -> Fetched:  # type: ignore[override]
        try:
            with self.lock:
                return Fetched(super().executemany(sql, [_redacted(sql, p) for p in seq]))
        except sqlite3.Error as exc:
            raise translate(exc, self.store_path) from exc


def _redacted(sql: str, parameters: Any) -> Any:
    from kernelevo.llm.redact import redact

    if not sql.lstrip().upper().startswith(_WRITES):
        return parameters
    if isinstance(parameters, dict):
        return {k: redact(v) if isinstance(v, str) else v for k, v in parameters.items()}
    return tuple(redact(v) if isinstance(v, str) else v for v in parameters)


def translate(exc: sqlite3.Error, path: Path) -> sqlite3.Error:
    """The one-line StoreError for a fault the user must act on; other errors unchanged."""
    if isinstance(exc, StoreError):
        return exc
    text = str(exc).lower()
    if "full" in text:
        return StoreError(
            f"the disk holding {path} is full: free some space and run again "
            "(what was stored before is intact)"
        )
    if "readonly" in text or "read-only" in text:
        return StoreError(
            f"{path} is read-only, so results cannot be saved: make it writable, or set "
            "KERNELEVO_STORE (or --store) to a writable place"
        )
    if "malformed" in text or "not a database" in text:
        return StoreError(f"{path} is damaged: move it aside (mv {path} {path}.bad) and run again")
    if "locked" in text:
        return StoreError(
            f"{path} is locked by another process (a long write or an exclusive lock): wait for "
            "it to finish and run again"
        )
    if "unable to open" in text:
        return StoreError(
            f"cannot open {path} as the store: set KERNELEVO_STORE (or --store) to a file in a "
            "writable folder"
        )
    if "disk i/o" in text:
        return StoreError(
            f"reading or writing {path} failed (disk I/O error): check the disk and run again"
        )
    return exc


def open_database(
    path: Path, prepare: Callable[[RedactingConnection], None]
) -> tuple[RedactingConnection, bool]:
    """(connection, read_only). `prepare` creates or migrates the schema; it is not run on a
    read-only store. A damaged file is moved aside and a fresh one prepared."""
    from kernelevo.llm.redact import register_environment_secrets

    register_environment_secrets()
    full = Path(os.path.abspath(path))
    if len(str(full)) + len("-journal") >= SQLITE_MAX_PATH:
        raise StoreError(
            f"the store path is {len(str(full))} characters long, past SQLite's limit of "
            f"{SQLITE_MAX_PATH}: set KERNELEVO_STORE (or --store) to a shorter path"
        )
    _refuse_what_is_not_a_store(full)
    if not _writable_place(full):
        return _open_read_only(full), True
    try:
        full.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create {full.parent} for the store: {exc.strerror}") from None
    for attempt in range(2):
        conn = _connect(str(full), full)
        try:
            prepare(conn)
            return conn, False
        except StoreError as exc:
            conn.close()
            if full.exists() and (
                "read-only" in str(exc) or "is full" in str(exc) or "disk I/O" in str(exc)
            ):
                if "read-only" not in str(exc):
                    print(
                        f"kernelevo: warning: {exc}; the store is open for reading only",
                        file=sys.stderr,
                    )
                return _open_read_only(full), True
            if "damaged" not in str(exc) or attempt:
                raise
            moved = _move_aside(full)
            print(
                f"kernelevo: warning: {full} was damaged; it was moved to {moved} and a fresh store was "
                "started",
                file=sys.stderr,
            )
    raise AssertionError("unreachable")


def _connect(target: str, path: Path, uri: bool = False) -> RedactingConnection:
    try:
        conn = sqlite3.connect(
            target,
            timeout=30.0,
            isolation_level=None,
            check_same_thread=False,
            uri=uri,
            factory=RedactingConnection,
        )
    except sqlite3.Error as exc:
        raise translate(exc, path) from None
    conn.store_path = path
    conn.lock = threading.RLock()
    conn.row_factory = sqlite3.Row
    return conn  # type: ignore[return-value]


def _open_read_only(path: Path) -> RedactingConnection:
    if not path.exists():
        raise StoreError(
            f"there is no store at {path} and its folder is read-only: set KERNELEVO_STORE "
            "(or --store) to a writable place"
        )
    last: sqlite3.Error | None = None
    for mode in (
        "mode=ro",
        "immutable=1",
    ):  # a WAL store on a read-only disk opens only as immutable
        conn = _connect(f"file:{quote(str(path))}?{mode}", path, uri=True)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error as exc:
            conn.close()
            last = exc
    assert last is not None
    raise translate(last, path)


def _writable_place(path: Path) -> bool:
    """False on a read-only mount or a file/folder this user may not write (root ignores modes,
    not mounts)."""
    probe = path if path.exists() else next((p for p in path.parents if p.exists()), Path("/"))
    try:
        if os.statvfs(probe).f_flag & os.ST_RDONLY:
            return False
    except OSError:
        return False
    return os.access(probe, os.W_OK)


SQLITE_HEADER = b"SQLite format 3\x00"
_OUR_TABLES = {"verdicts", "runs", "candidates", "llm_calls", "results"}


def _refuse_what_is_not_a_store(path: Path) -> None:
    """A store path naming something of the user's is refused, never taken over: a folder, a
    device or pipe, a file that is not SQLite, or a SQLite database of other tables. A damaged
    file is moved aside only inside a `.kernelevo` folder, where only KernelEvo writes."""
    if not path.exists():
        return
    where = "set KERNELEVO_STORE (or --store) to a new file or to a store KernelEvo made"
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a store file: {where}")
    if not path.is_file():
        raise StoreError(f"{path} is not a regular file: {where}")
    ours = path.parent.name == ".kernelevo"
    try:
        with path.open("rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
    if not head or ours:
        return  # empty (SQLite starts a database in it), or ours to repair
    if head != SQLITE_HEADER:
        raise StoreError(
            f"{path} is not an SQLite database, so not a KernelEvo store (if it was one, it is "
            f"damaged: move it aside and run again): {where}"
        )
    try:
        with sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True) as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error:
        return  # damaged: opening it says so
    if tables and not tables & _OUR_TABLES:
        raise StoreError(
            f"{path} is an SQLite database of other tables ({', '.join(sorted(tables)[:3])}), not a "
            f"KernelEvo store: {where}"
        )


def _move_aside(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while any(Path(str(target) + s).exists() for s in ("", "-wal", "-shm")):
        n += 1  # two repairs in one second: the first one's copy is kept
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    for suffix in ("", "-wal", "-shm"):
        part = Path(str(path) + suffix)
        if part.exists():
            part.rename(Path(str(target) + suffix))
    return target
