"""What a sandboxed process may use: the record the engine fills in and `spawn` obeys.

One record so that every caller (the worker pool, the judge, the reference runner) asks
for isolation the same way and a reader sees in one place what a candidate can reach.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

GiB = 1 << 30
MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Resource bounds. `memory_bytes` is the address space on CPU-only processes and the data
    segment on GPU ones (the CUDA driver reserves terabytes of address space it never uses);
    a memory cgroup, where one can be made, bounds resident memory as well."""

    memory_bytes: int | None = 32 * GiB
    file_bytes: int = 4 * GiB
    processes: int = 512
    cpu_seconds: int | None = 4 * 3600
    open_files: int = 4096
    scratch_bytes: int = 4 * GiB  # /tmp and /dev/shm (memory-backed) inside the sandbox
    output_keep_bytes: int = 64 * 1024  # half from the start of stdout/stderr, half from the end
    output_flood_bytes: int = 512 * MiB  # past this much output the process is killed
    cgroup: bool = True  # False only to show what the other defences hold without one


@dataclass(frozen=True)
class SandboxSpec:
    """Run `argv` isolated. Paths are bound at the same place inside; nothing else of the
    host's files is visible except the system directories and the Python installation.

    `channel_fds` are the only descriptors besides 0, 1, 2 that the process inherits.
    `isolate=False` is the user's explicit `--no-sandbox`: the same environment, limits and
    output cap, but no namespaces (every verdict made so says so)."""

    argv: Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)
    scratch: Path | None = None  # made (and removed afterwards) when not given
    read_only: Sequence[Path] = ()
    writable: Sequence[Path] = ()
    hidden: Sequence[Path] = ()  # masked even where a bound directory contains them
    gpu: bool = False
    channel_fds: Sequence[int] = ()
    limits: Limits = field(default_factory=Limits)
    isolate: bool = True
    unprivileged: bool = False  # started by root: run as a uid of its own (sandbox/enter.py)
    share_ipc: bool = (
        False  # keep the host's IPC namespace (System V / POSIX shared memory with the judge)
    )
