"""Bounds the kernel's limits cannot give without a cgroup, kept by watching from outside.

As root, RLIMIT_NPROC binds nothing, and a GPU process's memory limit (RLIMIT_DATA) does
not count pinned or shared mappings: a candidate could fork without end or pin all host
memory. Where no cgroup can be made (seen on the H200 and H100 machines), the sandbox's
processes and their resident memory are counted a few times a second and the whole sandbox
is killed past either bound.

One thread watches every sandbox of this process, from one reading of the process table per
round: a reading costs a few milliseconds of CPU, mostly holding the interpreter lock, and one
thread per sandbox (a judge, a runner host, a compile worker per slot, eight slots) spent two
cores on it and starved the engine's own threads.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from kernelevo.sandbox.spec import Limits

PAGE = os.sysconf("SC_PAGE_SIZE")
INTERVAL_S = 0.1


class ProcessTable:
    """Every live process's parent, session, state and name, read once from /proc."""

    def __init__(self) -> None:
        self.children: dict[int, list[int]] = {}
        self.facts: dict[int, tuple[int, int, bytes, str]] = {}  # pid -> ppid, sid, state, name
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            close = stat.rfind(b")")
            fields = stat[close + 2 :].split()  # state, ppid, pgrp, session, ...
            pid, ppid = int(entry), int(fields[1])
            name = stat[stat.find(b"(") + 1 : close].decode(errors="replace")
            self.facts[pid] = (ppid, int(fields[3]), fields[0], name)
            self.children.setdefault(ppid, []).append(pid)

    def zombie(self, pid: int) -> bool:
        return self.facts[pid][2] == b"Z"

    def in_session(self, sid: int) -> list[int]:
        """Live (not zombie) processes whose session id is `sid`."""
        return [p for p, (_, s, state, _) in self.facts.items() if s == sid and state != b"Z"]

    def below(self, pid: int) -> list[int]:
        """Every process below `pid` when the table was read."""
        found, todo = [], [pid]
        while todo:
            for child in self.children.get(todo.pop(), []):
                found.append(child)
                todo.append(child)
        return found


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` in the host's process tree."""
    return ProcessTable().below(pid)


class Watchdog:
    """Watches the process tree under `pid`; `tripped` says which bound it crossed, if any."""

    def __init__(
        self,
        pid: int,
        limits: Limits,
        kill: Callable[[], None],
        *,
        processes: bool,
        memory: bool,
        interval: float = INTERVAL_S,
    ) -> None:
        self.tripped = ""
        self._pid, self._limits, self._kill = pid, limits, kill
        self._processes, self._memory, self.interval = processes, memory, interval
        if processes or memory:  # nothing to watch where a cgroup holds both bounds
            _WATCHER.add(self)

    def check(self, table: ProcessTable) -> bool:
        """Whether to go on watching; past a bound, `tripped` is set and the sandbox killed."""
        tree = table.below(self._pid)
        if not tree and (self._pid not in table.facts or table.zombie(self._pid)):
            return False  # gone, or exited and not yet reaped: nothing left to bound
        if self._processes and len(tree) > self._limits.processes:
            self.tripped = f"more than {self._limits.processes} processes"
        elif (
            self._memory
            and self._limits.memory_bytes
            and resident(tree) > self._limits.memory_bytes
        ):
            self.tripped = f"more than {self._limits.memory_bytes >> 20} MiB resident"
        if not self.tripped:
            return True
        # a kill waits for the tree to go: the other sandboxes stay watched meanwhile
        threading.Thread(target=self._kill, name="sandbox-watchdog-kill", daemon=True).start()
        return False

    def stop(self) -> None:
        _WATCHER.discard(self)


class _Watcher:
    """The one thread that reads the process table each round and checks every watchdog;
    it runs while at least one is watched."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: set[Watchdog] = set()
        self._thread: threading.Thread | None = None
        self.rounds = 0  # tables read: what a test counts

    def add(self, dog: Watchdog) -> None:
        with self._lock:
            self._watched.add(dog)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="sandbox-watchdog", daemon=True
                )
                self._thread.start()

    def discard(self, dog: Watchdog) -> None:
        with self._lock:
            self._watched.discard(dog)

    def watching(self) -> int:
        with self._lock:
            return len(self._watched)

    def _run(self) -> None:
        while True:
            with self._lock:
                dogs = list(self._watched)
                if not dogs:
                    self._thread = None
                    return
            time.sleep(min(d.interval for d in dogs))
            table = ProcessTable()
            self.rounds += 1
            with self._lock:
                dogs = [d for d in dogs if d in self._watched]
            done = [d for d in dogs if not d.check(table)]
            with self._lock:
                self._watched.difference_update(done)


_WATCHER = _Watcher()


def resident(pids: list[int]) -> int:
    """Resident bytes of `pids` (shared pages counted once per process: an upper bound)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            pass
    return total
