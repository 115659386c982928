"""Running untrusted code (candidate kernels, and the processes that host them) isolated.

`spawn(SandboxSpec(argv, ...))` starts a process under bubblewrap: its own PID, network,
IPC and mount namespaces, a read-only system, one scratch folder, an allowlisted
environment, rlimits (and a cgroup where possible), capped output, and death with its
parent. `isolation()` says what this machine achieves; `refusal()` whether to go on.

Modules: spec (the request), env (the environment), mounts (the file system), limits
(rlimits, cgroup), output (capped stdout/stderr), process (start, kill everything),
probe (the isolation level).
"""

from kernelevo.sandbox.probe import Isolation, allow_unsandboxed, isolation, refusal, use_sandbox
from kernelevo.sandbox.sandbox_process import SandboxError, SandboxProcess, spawn
from kernelevo.sandbox.spec import GiB, Limits, MiB, SandboxSpec

__all__ = [
    "GiB",
    "Isolation",
    "Limits",
    "MiB",
    "SandboxError",
    "SandboxProcess",
    "SandboxSpec",
    "allow_unsandboxed",
    "isolation",
    "refusal",
    "spawn",
    "use_sandbox",
]
