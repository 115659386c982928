"""Starting, feeding, timing out and recycling worker processes.

A worker is persistent (importing torch costs seconds) and is replaced after
anything that may have poisoned it: a crash, a time-out (its whole process group is
killed), a CUDA error, or a candidate that patched the harness.
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kernelevo.worker import protocol
from kernelevo.worker.sandbox import scrubbed_env


class WorkerError(Exception):
    """The worker did not answer: `kind` is 'timeout' or 'crash'."""

    def __init__(self, kind: str, message: str, log: str = "") -> None:
        super().__init__(message)
        self.kind, self.log = kind, log


def worker_env(device: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    if device == "cpu":
        env.update({"TRITON_INTERPRET": "1", "KERNELEVO_CUDA_COMPILE_ONLY": "1", "CUDA_VISIBLE_DEVICES": ""})
    elif device == "compile":
        env.update({"KERNELEVO_CUDA_COMPILE_ONLY": "1", "CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "0"})
    else:  # a GPU run worker: torch.compile's baseline compiles in-process, leaving no pool of compile
        # processes busy on the host while the next candidate is timed
        env["TORCHINDUCTOR_COMPILE_THREADS"] = os.environ.get("TORCHINDUCTOR_COMPILE_THREADS", "1")
    src_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, os.environ.get("PYTHONPATH", "")) if p)
    env.update(extra or {})
    return scrubbed_env(extra=env)


class Worker:
    """One worker process. Not thread-safe: one request at a time."""

    def __init__(self, device: str = "cpu", *, env: dict[str, str] | None = None, start_timeout: float = 120.0) -> None:
        self.device = device
        self.extra_env = env or {}
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.workdir: str | None = None
        self.log_path: str | None = None
        self.requests_served = 0
        self.restarts = 0
        self._start_lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        self.workdir = tempfile.mkdtemp(prefix="kernelevo-worker-")
        self.log_path = os.path.join(self.workdir, "worker.log")
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernelevo.worker.main"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=self.workdir,
            env=worker_env(self.device, self.extra_env), start_new_session=True,
        )
        log.close()
        hello = self._read(time.monotonic() + self.start_timeout)
        if hello.get("op") != "ready":
            self.kill()
            raise WorkerError("crash", f"worker did not start: {hello}")

    def ensure_started(self) -> None:
        """Start (or replace a dead) process; safe to call from a warming thread while a request waits."""
        with self._start_lock:
            if self.alive:
                return
            if self.proc is not None:
                self.kill()
                self.restarts += 1
            self.start()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                self.proc.wait(timeout=10)
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream:
                    stream.close()
            self.proc = None
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def close(self) -> None:
        if self.alive:
            try:
                assert self.proc and self.proc.stdin
                protocol.write(self.proc.stdin, {"op": "exit"})
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired, BrokenPipeError):
                pass
        self.kill()

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests --------------------------------------------------------------------
    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request; on a time-out or crash the worker is killed and WorkerError raised."""
        self.ensure_started()
        assert self.proc and self.proc.stdin
        try:
            protocol.write(self.proc.stdin, message)
            reply = self._read(time.monotonic() + timeout)
        except WorkerError:
            raise
        except (BrokenPipeError, OSError) as exc:
            log = self.log_tail()
            self.kill()
            raise WorkerError("crash", f"worker died: {exc}", log) from exc
        self.requests_served += 1
        if reply.get("poisoned") or reply.get("integrity_violation"):
            self._reap()
        return reply

    def _reap(self) -> None:
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self.kill()
            self.restarts += 1

    def log_tail(self, limit: int = 3000) -> str:
        if not self.log_path or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode(errors="replace")

    def _read(self, deadline: float) -> dict[str, Any]:
        assert self.proc and self.proc.stdout
        fd = self.proc.stdout.fileno()
        buf = b""
        need = protocol.HEADER.size
        size: int | None = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                log = self.log_tail()
                self.kill()
                raise WorkerError("timeout", "time limit reached: the worker was stopped", log)
            ready, _, _ = select.select([fd], [], [], min(remaining, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, max(need - len(buf), 1 << 16) if size is None else need - len(buf))
            if not chunk:
                code = self.proc.wait(timeout=10)
                log = self.log_tail()
                self.kill()
                how = f"signal {-code}" if code < 0 else f"exit code {code}"
                raise WorkerError("crash", f"the worker process crashed ({how})", log)
            buf += chunk
            if size is None and len(buf) >= protocol.HEADER.size:
                (size,) = protocol.HEADER.unpack(buf[: protocol.HEADER.size])
                need = protocol.HEADER.size + size
            if size is not None and len(buf) >= need:
                import msgpack

                return msgpack.unpackb(buf[protocol.HEADER.size:need], raw=False, strict_map_key=False)


def start_all(workers: list[Worker]) -> None:
    """Start workers side by side (each pays its own torch import); raises the first failure."""
    errors: list[BaseException] = []

    def start(w: Worker) -> None:
        try:
            w.ensure_started()
        except Exception as exc:  # reported below, from the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(w,)) for w in workers if not w.alive]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
