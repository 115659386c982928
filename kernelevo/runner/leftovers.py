"""What one candidate can leave behind for the next in a reused sandbox, found and removed.

The runner host and the compile worker stay alive across candidates (importing torch costs
seconds) and fork a fresh child for each. The child dies with its process group, but it can
leave two kinds of state inside the sandbox the next child shares: processes that escaped the
group (a double-forked `setsid` daemon waiting to overwrite the next candidate's files) and
files in the writable places every child sees (scratch/HOME, the sandbox's own /tmp and
/dev/shm: a planted build folder, a poisoned cache entry). The host is a child subreaper, so
every orphan becomes its child; after each candidate it kills them and removes every file that
was not there when the host started (or changed since). Bind mounts (the exchange folder, the
candidate's cache) are left alone: the engine owns and removes them.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import time

PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4


def become_subreaper() -> bool:
    """Orphaned descendants reparent to this process instead of escaping to init. The host is
    also made non-dumpable: a child of the same uid cannot ptrace it or write its /proc/<pid>/mem."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def shared_places() -> list[str]:
    """Writable folders every child of this host sees: its scratch (cwd, HOME) always; /tmp and
    /dev/shm only inside the sandbox, where they are private memory-backed folders (unsandboxed
    they are the machine's own and other programs' files live there)."""
    places = {os.getcwd(), os.environ.get("HOME", "")}
    if os.environ.get("KERNELEVO_SANDBOXED") == "1":
        places |= {"/tmp", "/dev/shm", os.environ.get("TMPDIR", "")}
    return sorted(p for p in places if p and os.path.isdir(p))


def _walk(root: str) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(folder, d))]
        for name in dirs + files:
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            found[path] = (st.st_size, st.st_mtime_ns)
    return found


class Leftovers:
    """A snapshot of the host's writable places; `sweep()` returns (and undoes) what changed."""

    def __init__(self, places: list[str] | None = None) -> None:
        self.subreaper = become_subreaper()
        self.places = shared_places() if places is None else places
        self.before: dict[str, tuple[int, int]] = {}
        for place in self.places:
            self.before.update(_walk(place))

    def sweep(self, keep: frozenset[int] = frozenset()) -> list[str]:
        """`keep`: the host's own children that no candidate made (its spare candidate process)."""
        found = [f"process {pid} ({name})" for pid, name in kill_orphans(keep=keep)]
        for place in self.places:
            now = _walk(place)
            for path in sorted(now, key=len):
                if now[path] == self.before.get(path) or not os.path.lexists(path):
                    continue
                if path in self.before and os.path.isdir(path) and not os.path.islink(path):
                    continue  # an existing folder's mtime moved: its new entries are listed below
                found.append(path)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
        return found


def kill_orphans(rounds: int = 20, keep: frozenset[int] = frozenset()) -> list[tuple[int, str]]:
    """SIGKILL every child of this process but `keep` (after the candidate's own child is reaped,
    the only others left are orphans that reparented here), until none are left."""
    killed: list[tuple[int, str]] = []
    me = os.getpid()
    for _ in range(rounds):
        kids = [(pid, name) for pid, name in children(me) if pid not in keep]
        if not kids:
            break
        for pid, name in kids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append((pid, name))
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.005)
    return killed


def children(parent: int) -> list[tuple[int, str]]:
    """(pid, name) of each live child of `parent`; its zombie children are reaped on the way."""
    from kernelevo.sandbox.watchdog import ProcessTable

    table = ProcessTable()
    found = []
    for pid in table.children.get(parent, []):
        if not table.zombie(pid):
            found.append((pid, table.facts[pid][3]))
        else:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
    return found
