"""Starting and stopping one sandboxed process: `spawn(spec) -> SandboxProcess`.

Stopping is total: the process, every descendant (a double-forked `setsid` daemon is still
a descendant of bubblewrap, and dies with its PID namespace), and every member of its
cgroup; then the scratch folder goes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

from kernelevo.sandbox.env import sandbox_env
from kernelevo.sandbox.limits import Cgroup, apply_rlimits
from kernelevo.sandbox.mounts import bwrap_args
from kernelevo.sandbox.output import CappedOutput
from kernelevo.sandbox.spec import SandboxSpec
from kernelevo.sandbox.watchdog import Watchdog, descendants

_count = 0
# Signals with Python handlers in the caller (Ctrl-C's KeyboardInterrupt, optimize's SIGTERM stop):
# one sent to the caller's group between fork and setsid would run that handler in the child.
_GROUP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _hold_group_signals() -> None:
    """The spawner thread holds them (the main thread still takes them), so a child it forks
    starts with them pending, not handled, until `_release_group_signals` drops them."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _GROUP_SIGNALS)


def _release_group_signals() -> None:
    """In the child, after setsid: what reached the old group is discarded (the engine decides
    this process's end), and the defaults come back before exec."""
    for sig in _GROUP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _GROUP_SIGNALS)
    for sig in _GROUP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)


_spawner = ThreadPoolExecutor(
    max_workers=1, thread_name_prefix="sandbox-spawner", initializer=_hold_group_signals
)


class SandboxError(Exception):
    """The sandbox could not be started; the message says what to do."""


class SandboxProcess:
    """A running sandboxed process. `stdin`/`stdout` are the channel pipes when asked for;
    `output` holds the capped stderr (and stdout when there is no channel)."""

    def __init__(
        self,
        spec: SandboxSpec,
        proc: subprocess.Popen[bytes],
        output: CappedOutput,
        scratch: Path,
        owns_scratch: bool,
        cgroup: Cgroup,
        isolation: str,
    ) -> None:
        self.spec, self.proc, self.output, self.scratch = spec, proc, output, scratch
        self._owns_scratch, self.cgroup, self.isolation = owns_scratch, cgroup, isolation
        self.uid: int | None = (
            None  # the uid inside (None: the caller's own, unsandboxed or not root)
        )
        controls = " ".join(cgroup.controls)
        self.watchdog = Watchdog(
            proc.pid,
            spec.limits,
            self.kill,
            processes="pids" not in controls,
            memory=spec.gpu and "memory" not in controls,
        )

    @property
    def stopped_for(self) -> str:
        """Why the sandbox was killed from outside ('' when it was not): output flood or a bound."""
        if self.output.flooded:
            return "output past the limit"
        return self.watchdog.tripped

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def stdin(self) -> IO[bytes] | None:
        return self.proc.stdin

    @property
    def stdout(self) -> IO[bytes] | None:
        return self.proc.stdout

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float | None = None) -> int:
        code = self.proc.wait(timeout)
        self.output.join()
        return code

    def kill(self) -> None:
        """Kill the process and everything it started; idempotent."""
        self.watchdog.stop()
        tree = descendants(self.proc.pid) if self.proc.poll() is None else []
        for pid in [self.proc.pid, *tree]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.cgroup.kill_all()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        while any(_exists(p) for p in tree) and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self) -> None:
        """Kill, then release the pipes, the cgroup and the scratch folder."""
        self.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream:
                with contextlib.suppress(OSError):
                    stream.close()
        self.output.join(2.0)
        self.cgroup.remove()
        if self._owns_scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> SandboxProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def spawn(spec: SandboxSpec, *, channel: bool = True) -> SandboxProcess:
    """Start `spec.argv` as the spec says. With `channel`, stdin and stdout are pipes to the
    caller (the protocol); without, stdin is empty and stdout joins the capped output."""
    global _count
    bwrap = shutil.which("bwrap")
    if spec.isolate and not bwrap:
        raise SandboxError(
            "bubblewrap (bwrap) is not installed: install the `bubblewrap` package, "
            "or pass --no-sandbox to run candidates unisolated"
        )
    owns = spec.scratch is None
    scratch = Path(tempfile.mkdtemp(prefix="kernelevo-sandbox-")) if owns else Path(spec.scratch)  # type: ignore[arg-type]
    scratch.mkdir(parents=True, exist_ok=True)
    env = sandbox_env(spec.env, home=str(scratch))
    env.pop("KERNELEVO_SANDBOXED", None)
    if spec.isolate:  # /tmp and /dev/shm are the sandbox's own (runner/leftovers.py may clear them)
        env["KERNELEVO_SANDBOXED"] = "1"
    _count += 1
    uid = sandbox_uid() if spec.isolate and spec.unprivileged else None
    inner = list(spec.argv)
    if uid is not None:
        for path in [scratch, *spec.writable]:
            os.chown(path, uid, uid)
        os.chmod(scratch, 0o711)  # bubblewrap (root without capabilities) must still enter it
        enter = str(Path(__file__).with_name("enter.py"))
        inner = [sys.executable, "-I", enter, str(uid), "--", *inner]
    keep = ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if uid is not None else []
    argv = (
        [bwrap or "bwrap", *bwrap_args(spec, scratch), *keep, "--", *inner]
        if spec.isolate
        else inner
    )
    cgroup = Cgroup(
        f"kernelevo-{os.getpid()}-{_count}", spec.limits if spec.limits.cgroup else None
    )
    read_fd, write_fd = os.pipe()

    def in_child() -> None:
        _release_group_signals()
        cgroup.enter()
        apply_rlimits(spec.limits, spec.gpu)

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if channel else subprocess.DEVNULL,
            stdout=subprocess.PIPE if channel else write_fd,
            stderr=write_fd,
            cwd=scratch,
            env=env,
            close_fds=True,
            pass_fds=tuple(spec.channel_fds),
            start_new_session=True,
            preexec_fn=in_child,
        )

    try:  # from one long-lived thread: bubblewrap dies with the *thread* that started it
        proc = _spawner.submit(start).result()
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        cgroup.remove()
        if owns:
            shutil.rmtree(scratch, ignore_errors=True)
        raise SandboxError(f"could not start {argv[0]}: {exc}") from exc
    os.close(write_fd)
    holder: list[SandboxProcess] = []

    def on_flood() -> None:
        if holder:
            holder[0].kill()

    output = CappedOutput(
        read_fd, spec.limits.output_keep_bytes, spec.limits.output_flood_bytes, on_flood=on_flood
    )
    process = SandboxProcess(
        spec, proc, output, scratch, owns, cgroup, "bwrap" if spec.isolate else "none"
    )
    process.uid = uid if uid is not None else (0 if spec.isolate and os.geteuid() == 0 else None)
    holder.append(process)
    return process


UID_BASE = 1_000_000  # above any account's uid; no passwd entry needed


def sandbox_uid() -> int | None:
    """A uid of its own for the next sandbox (so sandboxes cannot signal or read each other
    either), or None where this process is not root (bubblewrap then maps the caller's own uid
    in a user namespace) or KERNELEVO_SANDBOX_UID=0 asks to stay uid 0 without capabilities."""
    if os.geteuid() != 0 or os.environ.get("KERNELEVO_SANDBOX_UID") == "0":
        return None
    return UID_BASE + (os.getpid() % 10000) * 100 + _count % 100


def _exists(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"Z"  # a zombie is already dead
    except OSError:
        return False
