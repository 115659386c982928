"""Starting, feeding, timing out and recycling worker processes.

A worker is persistent (importing torch costs seconds) and is replaced after
anything that may have poisoned it: a crash, a time-out (it and every process it
started are killed), a CUDA error, or a candidate that patched the harness.

Every worker runs in a sandbox (kernelevo/sandbox): it sees no workspace, store, home or
config file, so the task and candidate files a request names are copied into a
read-only inbox and the request's paths point there; paths in the reply are mapped back.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kernelevo.sandbox import Limits, SandboxError, SandboxProcess, SandboxSpec, spawn, use_sandbox
from kernelevo.sandbox.probe import isolation, sandbox_wanted
from kernelevo.worker import cache_folders, protocol
from kernelevo.worker.inbox import Inbox
from kernelevo.worker.sandbox_view import (
    cache_dirs,
    hidden_paths,
    profile_folder,
    task_roots,
    worker_env,
)


class WorkerError(Exception):
    """The worker did not answer: `kind` is 'timeout' or 'crash'. `lost`: it was taken from outside
    (SIGKILL or SIGTERM, never started, its pipe broke), so its failure says nothing of the request."""

    def __init__(self, kind: str, message: str, log: str = "", *, lost: bool = False) -> None:
        super().__init__(message)
        self.kind, self.log, self.lost = kind, log, lost


class Worker:
    """One worker process. Not thread-safe: one request at a time."""

    def __init__(
        self,
        device: str = "cpu",
        *,
        env: dict[str, str] | None = None,
        start_timeout: float = 120.0,
        isolate: bool | None = None,
        module: str | None = None,
        writable: list[str] | None = None,
        file_bytes: int | None = None,
    ) -> None:
        """`module`: the process's main module (the judge, the runner host); by default the compile
        worker for device 'compile', else the plain loop (ping only). `writable`: folders it may
        write besides its scratch (the exchange folder a judge and a runner host share); `file_bytes`:
        the largest file it may write, where tensors cross through files (a 6 GiB input set)."""
        self.device = device
        self.module = module or (
            "kernelevo.runner.compile_worker" if device == "compile" else "kernelevo.worker.main"
        )
        self.extra_env = env or {}
        self.extra_writable = [Path(p) for p in (writable or [])]
        self.file_bytes = file_bytes
        self.start_timeout = start_timeout
        self.isolate = isolate
        self.proc: SandboxProcess | None = None
        self.inbox = Inbox()
        self.user_roots: set[Path] = (
            set()
        )  # the user's package folders tasks import from (read-only)
        self.requests_served = 0
        self.restarts = 0
        # the only build-cache folder this sandbox may write: one candidate's at a time
        self.cache_root = cache_folders.make_root("kernelevo-cc-") if self.runs_candidates else None
        self._start_lock = threading.Lock()
        self._last_log = ""
        self.start_s: float | None = None  # seconds its last start took (imports, warm-up)
        self.waited_s = 0.0  # how long requests waited for a start begun by `start_soon`
        self.start_parts: dict[str, float] = {}  # where its last start went (start_parts below)
        self._starter: threading.Thread | None = None
        self._start_error: BaseException | None = None
        self._closing = False

    @property
    def isolation(self) -> str:
        """'sandbox' or 'none' (`--no-sandbox`): recorded in every verdict this worker gives."""
        isolate = self.isolate if self.isolate is not None else use_sandbox()
        return "sandbox" if isolate else "none"

    @property
    def runs_candidates(self) -> bool:
        """The runner host and the compile worker execute candidate code; the judge never does."""
        return self.module.startswith("kernelevo.runner.")

    def spec(self) -> SandboxSpec:
        """The shared build caches are writable only where no candidate runs (the judge): a
        candidate writes only its own cache folder (runner/candidate_cache.py), in `writable`.
        Isolated unless the user said `--no-sandbox`; whether this machine can isolate is
        checked by `start` before the process is used."""
        isolate = self.isolate if self.isolate is not None else sandbox_wanted()
        env = worker_env(self.device, self.extra_env)
        caches = {Path(env[k]) for k in cache_dirs() if k in env}
        own = {self.cache_root} if self.cache_root else set()
        writable = sorted(
            set(self.extra_writable)
            | own
            | (set() if self.runs_candidates else caches)
            | profile_folder()
        )
        roots = sorted(self.user_roots)
        compiled = [Path(env["PYTHONPYCACHEPREFIX"])] if "PYTHONPYCACHEPREFIX" in env else []
        read_only = [
            self.inbox.root,
            *roots,
            *(sorted(caches) if self.runs_candidates else []),
            *compiled,
        ]
        return SandboxSpec(
            [sys.executable, "-m", self.module],
            env=env,
            read_only=read_only,
            writable=writable,
            hidden=[*hidden_paths(), *(r / ".kernelevo" for r in roots)],
            gpu=self.device not in ("cpu", "compile"),
            isolate=isolate,
            unprivileged=self.runs_candidates,
            limits=Limits(file_bytes=self.file_bytes) if self.file_bytes else Limits(),
        )

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        """Raises SandboxError (a one-line refusal) where isolation is wanted but cannot start.
        The isolation probe (one sandbox, once per process) runs beside this start, not before it:
        the process runs only KernelEvo's own imports and warm-up until its first request, and a
        refusal stops it before it gets one."""
        t0 = time.perf_counter()
        checked = self.isolate is None and sandbox_wanted()
        if checked:
            threading.Thread(target=isolation, name="isolation probe", daemon=True).start()
        try:
            self.proc = spawn(self.spec())
            if self._closing:  # closed while this start was under way: nothing may outlive close()
                self.kill()
                raise WorkerError("crash", "the worker was closed while it started")
            if (
                self.cache_root is not None
            ):  # a restarted sandbox has a uid of its own: what it holds follows
                for entry in self.cache_root.iterdir():
                    cache_folders.own_like(self.cache_root, entry)
            hello = self._read(time.monotonic() + self.start_timeout)
        except (SandboxError, WorkerError):
            if checked:  # the probe's refusal, where it has one, says what to do
                self._refuse_unless_isolated()
            raise
        if hello.get("op") != "ready":
            self.kill()
            raise WorkerError("crash", f"worker did not start: {hello}", lost=True)
        if checked:
            self._refuse_unless_isolated()
        self.start_parts = protocol.start_parts(time.perf_counter() - t0, hello.get("age_s"))

    def _refuse_unless_isolated(self) -> None:
        try:
            use_sandbox()
        except SandboxError:
            self.kill()
            raise

    def start_soon(self) -> None:
        """Begin starting the process in a thread of its own and return at once: the first request
        waits for this start only (not for other workers'), and fails with what the start raised."""
        if self.alive or self._starter is not None:
            return
        self._start_error = None
        self._starter = threading.Thread(
            target=self._timed_start, name=f"start {self.module}", daemon=True
        )
        self._starter.start()

    def _timed_start(self) -> None:
        t0 = time.perf_counter()
        try:
            self.ensure_started()
        except BaseException as exc:  # raised from the thread of the request that needs it
            self._start_error = exc
        self.start_s = round(time.perf_counter() - t0, 3)

    def wait_started(self) -> None:
        """Wait for a start begun by `start_soon`, then raise what it raised (once)."""
        starter = self._starter
        if starter is None or starter is threading.current_thread():
            return
        t0 = time.perf_counter()
        starter.join()
        self.waited_s = round(self.waited_s + time.perf_counter() - t0, 3)
        self._starter = None
        failed, self._start_error = self._start_error, None
        if failed is not None:
            raise failed

    def ensure_started(self) -> None:
        """Start (or replace a dead) process; safe to call from a warming thread while a request waits."""
        self.wait_started()
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
        # one read of self.proc: close() on the search's thread may race the warm-up thread
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.close()
            self._last_log = proc.output.text()

    def close(self, graceful: bool = True) -> None:
        """`graceful`: ask the process to exit and wait up to 5 s (its interpreter's teardown with
        torch loaded takes seconds); else kill it at once, as a one-shot verify does once its
        verdict is in (nothing is left to write: the sandbox and its files go either way). A start
        still under way is stopped too."""
        self._closing = True
        starter = self._starter
        if starter is not None and starter is not threading.current_thread():
            proc = self.proc
            if proc is not None:  # its pipe ends, so the start's wait for "ready" ends at once
                proc.kill()
            starter.join()
            self._starter, self._start_error = None, None
        self._closing = False
        if self.alive and graceful:
            try:
                assert self.proc and self.proc.stdin
                protocol.write(self.proc.stdin, {"op": "exit"})
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired, BrokenPipeError):
                pass
        self.kill()
        self.inbox.remove()
        if self.cache_root is not None:
            cache_folders.discard(self.cache_root)

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests --------------------------------------------------------------------
    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request; on a time-out or crash the worker is killed and WorkerError raised."""
        roots = task_roots(message.get("task_path"))
        if (
            not roots <= self.user_roots
        ):  # a task importing the user's own package: restart with it visible
            self.user_roots |= roots
            with self._start_lock:
                self.kill()
        self.ensure_started()
        assert self.proc and self.proc.stdin
        compiling = self.cache_root is not None and message.get("op") in ("precompile", "aot")
        folder, key = None, None
        if compiling:  # nothing an earlier candidate left in the root stays, then a fresh folder
            cache_folders.clear(self.cache_root)  # type: ignore[arg-type]
            folder = cache_folders.fresh(self.cache_root)  # type: ignore[arg-type]
            key = _content_key(message)
            if key:
                cache_folders.seed(folder, key)
        if folder is not None:
            message = {**message, "cache": str(folder)}
        try:
            protocol.write(self.proc.stdin, self.inbox.rewrite(message))
            reply = self.inbox.map_back(self._read(time.monotonic() + timeout))
        except WorkerError:
            cache_folders.discard(folder)
            raise
        except (BrokenPipeError, OSError) as exc:
            cache_folders.discard(folder)
            log = self.log_tail()
            self.kill()
            raise WorkerError("crash", f"worker died: {exc}", log, lost=True) from exc
        if (
            folder is not None
        ):  # out of this sandbox's reach before the next candidate compiles here
            reply["cache_folder"] = str(cache_folders.hold(folder, key))
        self.requests_served += 1
        if reply.get("poisoned") or reply.get("integrity_violation"):
            self._reap()
        return reply

    def install_cache(self, held: str | None) -> str:
        """The folder the next candidate process uses for every build cache: the one its compile
        filled (`held`), or a fresh one; whatever an earlier candidate left in the root is gone."""
        assert self.cache_root is not None
        return str(cache_folders.install(Path(held) if held else None, self.cache_root))

    def _reap(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
            self.kill()
            self.restarts += 1

    def log_tail(self, limit: int = 3000) -> str:
        """The worker's output (start and end kept when it flooded), mapped to the user's paths."""
        proc = self.proc
        text = proc.output.text() if proc is not None else self._last_log
        return self.inbox.map_back(text)[-limit:]

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
                if self.proc.output.flooded:
                    self.kill()
                    raise WorkerError(
                        "crash", "the worker was stopped: its output passed the limit", log
                    )
                self.kill()
                how = f"signal {-code}" if code < 0 else f"exit code {code}"
                lost = code in (-signal.SIGKILL, -signal.SIGTERM)
                raise WorkerError("crash", f"the worker process crashed ({how})", log, lost=lost)
            buf += chunk
            if size is None and len(buf) >= protocol.HEADER.size:
                (size,) = protocol.HEADER.unpack(buf[: protocol.HEADER.size])
                need = protocol.HEADER.size + size
            if size is not None and len(buf) >= need:
                try:
                    return protocol.decode(buf[protocol.HEADER.size : need])
                except protocol.ProtocolError as exc:  # no frame of ours: the channel is spoilt
                    log = self.log_tail()
                    self.kill()
                    raise WorkerError("crash", f"the worker sent {exc}", log) from None


def _content_key(message: dict[str, Any]) -> str | None:
    """The content a compile request depends on, or None where a file cannot be read."""
    try:
        sources = [
            Path(message[k]).read_bytes() for k in ("candidate_path", "task_path") if k in message
        ]
    except (OSError, TypeError):
        return None
    fields = [str(message.get(k)) for k in ("op", "backend", "arch", "size", "build_inline")]
    return cache_folders.content_key(*sources, *fields)


def start_all(workers: list[Worker]) -> None:
    """Start workers side by side (each pays its own torch import); raises the first failure.
    Each start is the worker's own `start_soon`, so `start_s` is timed in one place."""
    for w in workers:
        w.start_soon()
    errors: list[BaseException] = []
    for w in workers:
        try:
            w.ensure_started()
        except Exception as exc:  # every start is waited for before the first failure is raised
            errors.append(exc)
    if errors:
        raise errors[0]
