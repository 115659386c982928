"""Resource limits of a sandboxed process: rlimits always, a cgroup where one can be made.

rlimits are inherited by every descendant and cost nothing. Two gaps they leave are closed
by a cgroup when the machine allows one: process count (RLIMIT_NPROC does not bind root)
and resident memory of the whole tree (the address-space limit cannot be used with CUDA).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
from pathlib import Path

from kernelevo.sandbox.spec import Limits

_ROOT = Path("/sys/fs/cgroup")


def apply_rlimits(limits: Limits, gpu: bool) -> None:
    """Called in the child between fork and exec (it must not allocate much or take locks)."""

    def cap(which: int, value: int | None) -> None:
        if value is not None:
            resource.setrlimit(which, (value, value))

    cap(resource.RLIMIT_AS if not gpu else resource.RLIMIT_DATA, limits.memory_bytes)
    cap(resource.RLIMIT_FSIZE, limits.file_bytes)
    cap(resource.RLIMIT_NPROC, limits.processes)
    cap(resource.RLIMIT_CPU, limits.cpu_seconds)
    cap(resource.RLIMIT_NOFILE, limits.open_files)
    cap(resource.RLIMIT_CORE, 0)


class Cgroup:
    """A fresh cgroup (v2, or v1 `pids` + `memory`) holding one sandbox; `None` fields where
    a controller could not be made. `enter()` runs in the child before exec."""

    def __init__(self, name: str, limits: Limits | None) -> None:
        self.dirs: list[Path] = []
        self.controls: list[str] = []
        if limits is None:
            return
        if (_ROOT / "cgroup.controllers").exists():
            self._make_v2(name, limits)
        else:
            self._make_v1("pids", name, {"pids.max": str(limits.processes)})
            if limits.memory_bytes:
                self._make_v1("memory", name, {"memory.limit_in_bytes": str(limits.memory_bytes)})

    def _make_v2(self, name: str, limits: Limits) -> None:
        here = _ROOT / _own_path("")
        try:  # a child gets a controller only where its parent enables it (allowed in the root cgroup)
            offered = set((here / "cgroup.controllers").read_text().split())
            enabled = set((here / "cgroup.subtree_control").read_text().split())
            wanted = [c for c in ("pids", "memory") if c in offered and c not in enabled]
            if wanted:
                (here / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
        except OSError:
            pass
        files = {"pids.max": str(limits.processes)}
        if limits.memory_bytes:
            files.update({"memory.max": str(limits.memory_bytes), "memory.swap.max": "0"})
        self._make(here / name, files, "v2")

    def _make_v1(self, controller: str, name: str, files: dict[str, str]) -> None:
        base = _ROOT / controller
        if base.is_dir():
            self._make(base / _own_path(controller) / name, files, controller)

    def _make(self, path: Path, files: dict[str, str], label: str) -> None:
        try:
            path.mkdir()
        except OSError:
            return
        written = []
        for fname, value in files.items():
            try:
                (path / fname).write_text(value)
                written.append(fname.split(".")[0])
            except OSError:
                pass
        if not written:
            _remove(path)
            return
        self.dirs.append(path)
        self.controls += [f"{label}:{w}" if label == "v2" else w for w in written]

    def enter(self) -> None:
        pid = str(os.getpid())
        for d in self.dirs:
            with open(d / "cgroup.procs", "w") as f:
                f.write(pid)

    def kill_all(self) -> None:
        """SIGKILL every process still in the group (daemons that left the process group)."""
        for d in self.dirs:
            try:
                pids = (d / "cgroup.procs").read_text().split()
            except OSError:
                continue
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)

    def remove(self) -> None:
        for d in self.dirs:
            _remove(d)
        self.dirs = []


def _own_path(controller: str) -> str:
    """This process's cgroup path for `controller` ('' for the v2 hierarchy)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if (controller and controller in names.split(",")) or (not controller and names == ""):
            return path.lstrip("/")
    return ""


def _remove(path: Path) -> None:
    import time

    for _ in range(50):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
