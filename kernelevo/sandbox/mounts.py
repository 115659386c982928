"""The file system a sandboxed process sees, as bubblewrap arguments.

An allowlist again: the system directories and the Python installation read-only, the
kernelevo package read-only, one writable scratch folder, and only what the caller names
besides. The user's home, the workspace (with `.kernelevo/`), config files holding keys and
every other process's `/proc` entry are simply absent.
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

from kernelevo.sandbox.spec import SandboxSpec

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
SYSTEM_SECRETS = (
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/sudoers",
    "/etc/sudoers.d",
)  # readable by uid 0 whatever their mode
GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")


def package_root() -> Path:
    """The folder holding the `kernelevo` package (what PYTHONPATH names inside)."""
    return Path(__file__).resolve().parents[2]


def python_paths() -> list[Path]:
    """The interpreter's prefixes and every existing sys.path folder: what `import torch` needs."""
    prefixes = {
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sys.exec_prefix),
        Path(sys.executable).parent.parent,
        Path(sys.executable).resolve().parent.parent,
    }
    paths = set(prefixes)
    for entry in (
        sys.path
    ):  # installed packages only: sys.path also holds the caller's folder (the workspace)
        if (
            entry
            and os.path.isdir(entry)
            and ({"site-packages", "dist-packages"} & set(Path(entry).parts))
        ):
            paths.add(Path(entry))
    resolved = {p.resolve() for p in paths} | paths
    return _outermost(p for p in resolved if not _under_system(p) and p != package_root())


def gpu_nodes() -> list[str]:
    """The NVIDIA device nodes present on this machine: the only devices a GPU worker gets."""
    nodes = sorted(glob.glob("/dev/nvidia[0-9]*")) + [n for n in GPU_NODES if os.path.exists(n)]
    if os.path.isdir("/dev/nvidia-caps"):
        nodes.append("/dev/nvidia-caps")
    return nodes


def bwrap_args(spec: SandboxSpec, scratch: Path) -> list[str]:
    """Arguments for `bwrap` (without the command) that build the sandbox described by `spec`."""
    # a process that drops to a uid of its own (sandbox/enter.py) must stay in the host's user
    # namespace: inside one that bubblewrap made, only the caller's uid is mapped
    args = [
        *([] if spec.unprivileged and os.geteuid() == 0 else ["--unshare-user-try"]),
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        *([] if spec.share_ipc else ["--unshare-ipc"]),
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
    ]
    for top in SYSTEM:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    # /proc/sys read-only: the process is uid 0 without capabilities, and the kernel lets the owner of a
    # sysctl write it (core_pattern would run a program as root on the host)
    args += [
        "--proc",
        "/proc",
        "--ro-bind",
        "/proc/sys",
        "/proc/sys",
        "--dev",
        "/dev",
        "--ro-bind-try",
        "/sys",
        "/sys",
    ]
    size = str(spec.limits.scratch_bytes)
    for tmp in (
        "/tmp",
        "/dev/shm",
    ):  # sticky and world-writable, as on the host (an unprivileged uid writes)
        args += ["--size", size, "--perms", "1777", "--tmpfs", tmp]
    pkg = package_root() / "kernelevo"
    binds = [
        *(("--ro-bind", p) for p in [*python_paths(), pkg, *spec.read_only]),
        *(("--bind", p) for p in [*spec.writable, scratch]),
    ]
    for folder in _parents([Path(p) for _, p in binds]):
        args += ["--perms", "0755", "--dir", str(folder)]  # bubblewrap would make them 0700
    for how, path in binds:
        args += [how, str(path), str(path)]
    if spec.gpu:
        for node in gpu_nodes():
            args += ["--dev-bind", node, node]
    for hidden in [*SYSTEM_SECRETS, *map(str, spec.hidden)]:
        if os.path.isdir(hidden):
            args += ["--tmpfs", hidden]
        elif os.path.exists(hidden):
            args += ["--ro-bind", "/dev/null", hidden]
    args += ["--remount-ro", "/", "--chdir", str(scratch)]
    return args


def _parents(paths: list[Path]) -> list[str]:
    """Folders above the bind targets that the sandbox does not have yet, outermost first: made
    traversable, so a sandbox running as a uid of its own reaches what it is given."""
    found: set[str] = set()
    for path in paths:
        for parent in list(path.parents)[:-1]:
            text = str(parent)
            if not _under_system(parent) and text not in ("/tmp", "/dev/shm", "/dev", "/proc"):
                found.add(text)
    return sorted(found, key=lambda p: (p.count("/"), p))


def _under_system(path: Path) -> bool:
    return any(
        str(path) == top or str(path).startswith(top + "/")
        for top in SYSTEM
        if not os.path.islink(top)
    )


def _outermost(paths) -> list[Path]:
    """Drop folders already inside another folder of the list (one bind covers them)."""
    ordered = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for p in ordered:
        if not any(p == k or k in p.parents for k in kept):
            kept.append(p)
    return kept
