"""Bounds the kernel's limits cannot give without a cgroup, kept by watching from outside.

As root, RLIMIT_NPROC binds nothing, and a GPU process's memory limit (RLIMIT_DATA) does
not count pinned or shared mappings: a candidate could fork without end or pin all host
memory. Where no cgroup can be made (seen on the H200 machine), a thread counts the
sandbox's processes and their resident memory a few times a second and kills the whole
sandbox past either bound.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from kernelevo.sandbox.spec import Limits

PAGE = os.sysconf("SC_PAGE_SIZE")


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
        interval: float = 0.1,
    ) -> None:
        self.tripped = ""
        self._pid, self._limits, self._kill = pid, limits, kill
        self._processes, self._memory, self._interval = processes, memory, interval
        self._stop = threading.Event()
        if processes or memory:  # nothing to watch where a cgroup holds both bounds
            threading.Thread(target=self._watch, name="sandbox-watchdog", daemon=True).start()

    def _watch(self) -> None:
        from kernelevo.sandbox.process import descendants

        while not self._stop.wait(self._interval):
            tree = descendants(self._pid)
            if not tree and not os.path.exists(f"/proc/{self._pid}"):
                return
            if self._processes and len(tree) > self._limits.processes:
                self.tripped = f"more than {self._limits.processes} processes"
            elif (
                self._memory
                and self._limits.memory_bytes
                and resident(tree) > self._limits.memory_bytes
            ):
                self.tripped = f"more than {self._limits.memory_bytes >> 20} MiB resident"
            if self.tripped:
                self._kill()
                return

    def stop(self) -> None:
        self._stop.set()


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
