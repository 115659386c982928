"""The candidate runner host: a process that has imported torch and Triton but never runs a candidate.

For each candidate it forks a fresh child (kernelevo/runner/candidate.py), so no patch
one candidate makes can reach the next, and the child pays no import cost. The host
relays the engine's requests to the child over a socket of their own and wraps each
answer as `{"reply": ...}`: whatever the child sends is data for the judge, never a
verdict. The child loses the host's protocol pipe before any candidate code runs, dies
with the host, and is killed (its whole process group) at a time limit or on `close`.
CUDA is never initialised here (a forked child could not use it); each child does that
itself. So that this cost is not paid inside a verdict, the candidate host keeps one spare child
forked ahead (at start and after each candidate is closed): it starts CUDA and then waits, having
run nothing but this module, and the next `open` hands it the candidate.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import socket
import time
from collections.abc import Callable
from typing import Any, BinaryIO

from kernelevo.runner import spare_start
from kernelevo.worker import candidate_replies as cp
from kernelevo.worker import protocol


def _die_with_parent() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


READY = {"ready": True}  # a child's first frame: started, ready for its first request
READY_S = 25.0  # the longest a child may take to start: two tries fit in the engine's 60 s for open


def _kill_group(pid: int) -> None:
    """SIGKILL a child and its process group (it made itself the group's leader)."""
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


def _child_main(
    sock: socket.socket,
    keep_fds: set[int],
    kind: str,
    spare: bool = False,
    profiler: bool = False,
    libraries: tuple[str, ...] = (),
) -> None:
    """The forked child: drop every inherited descriptor but its socket and stderr, then serve."""
    _die_with_parent()
    os.setpgid(0, 0)
    fd = sock.fileno()
    for other in range(3, 1024):
        if other != fd and other not in keep_fds:
            with contextlib.suppress(OSError):
                os.close(other)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    if spare:
        spare_start.start_cuda(profiler, libraries)
    import threading

    from kernelevo.worker.harness_integrity import Integrity, harness_violations

    handle = _handler(kind)
    if os.environ.get("KERNELEVO_WORKER_PROFILE"):  # bench/profile_verdict.py: the child's ops too
        from kernelevo.worker.main import profiled

        handle = functools.partial(profiled, handle)
    integrity = Integrity()
    stream = sock.makefile("rwb", buffering=0)
    code = 0
    try:
        protocol.write(stream, READY)  # type: ignore[arg-type]
        while True:
            request = protocol.read(stream)  # type: ignore[arg-type]
            if request is None:
                break
            before = {t.ident for t in threading.enumerate()}
            try:
                reply = handle(request)
            except BaseException as exc:  # the child answers every request it survives
                reply = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
            patched = harness_violations(integrity, before)
            if patched:
                reply["integrity_violation"] = patched
            protocol.write(stream, reply)  # type: ignore[arg-type]
    except BaseException:
        code = 1
    os._exit(code)


def _handler(kind: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """What the child serves: one candidate's requests, or one compile-ahead request."""
    from kernelevo.runner import candidate_cache

    if kind == "compile":
        from kernelevo.runner.compile_worker import compile_request

        def compile_one(request: dict[str, Any]) -> dict[str, Any]:
            if isinstance(request.get("cache"), str):
                candidate_cache.use(request["cache"])
            return compile_request(request)

        return compile_one
    from kernelevo.runner.candidate import CandidateProcess

    proc = CandidateProcess()

    def candidate_one(request: dict[str, Any]) -> dict[str, Any]:
        if request.get("op") == "load" and isinstance(request.get("cache"), str):
            candidate_cache.use(request["cache"])  # before the candidate is imported
        return proc.handle(request)

    return candidate_one


class Host:
    """At most one child at a time; the engine opens, feeds and closes it. A candidate host also
    holds one spare: a fresh child that has started CUDA and never served a request."""

    def __init__(self, kind: str = "candidate") -> None:
        from kernelevo.runner.leftovers import Leftovers

        self.kind = kind
        self.leftovers = Leftovers()  # after the imports: what a child changes is its doing
        self.parent = os.getppid()
        self.child: int | None = None
        self.sock: socket.socket | None = None
        self.stream: BinaryIO | None = None
        self.keeps_spare = kind == "candidate"
        self.dirty = False
        self.spare: tuple[int, socket.socket] | None = None
        self.profiler = False  # the last candidate's task profiled its kernels: the spare warms it
        self.libraries: tuple[str, ...] = ()  # vendor libraries it called: the spare starts them
        # a child closed with `later`: reaped and swept before the next request
        self.settling = False
        self._fork_spare()

    def _fork(self, keep_fds: set[int], spare: bool) -> tuple[int, socket.socket]:
        parent, child = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            parent.close()
            # never returns (serves, then exits)
            libraries = self.libraries if spare else ()
            _child_main(child, keep_fds, self.kind, spare, spare and self.profiler, libraries)
        child.close()
        return pid, parent

    def _fork_spare(self) -> None:
        if self.keeps_spare and self.spare is None:
            self.spare = self._fork(set(), spare=True)

    def _take_spare(self) -> tuple[int, socket.socket] | None:
        spare, self.spare = self.spare, None
        if spare is None:
            return None
        try:
            alive = os.waitpid(spare[0], os.WNOHANG) == (0, 0)
        except ChildProcessError:
            alive = False
        if not alive:
            spare[1].close()
            return None
        return spare

    def drop_spare(self) -> None:
        spare, self.spare = self.spare, None
        if spare is not None:
            _kill_group(spare[0])
            with contextlib.suppress(ChildProcessError):
                os.waitpid(spare[0], 0)
            spare[1].close()

    def open(self, keep_fds: set[int]) -> cp.Opened:
        """Hand the spare child the next candidate (or fork one when there is none), once it has
        started: the wait for a spare still starting CUDA is here, not inside the first request
        that the verdict makes while it holds its GPU's gate (kernelevo/gpu_gate.py)."""
        self._end_child()
        t0 = time.monotonic()
        taken = None if keep_fds else self._take_spare()
        for child in (taken, None):
            self.child, self.sock = child or self._fork(keep_fds, spare=False)
            self.dirty = True  # a candidate may run from here: the next end sweeps
            self.stream = self.sock.makefile("rwb", buffering=0)  # type: ignore[assignment]
            if self._await(READY_S).reply == READY:
                break
            self._kill()  # a spare that died starting, or never said it had started: a fresh one
            taken = None
        return cp.Opened(
            opened=self.child, spare=taken is not None, ready_s=round(time.monotonic() - t0, 4)
        )

    def relay(self, request: dict[str, Any], timeout: float) -> cp.Relayed:
        if self.child is None or self.stream is None or self.sock is None:
            return cp.Relayed(child_exit="no candidate process is open")
        try:
            protocol.write(self.stream, request)
        except OSError:
            return cp.Relayed(child_exit=self._reap())
        return self._await(timeout)

    def _await(self, timeout: float) -> cp.Relayed:
        """The open child's next frame within `timeout`, or how it failed to send one."""
        if self.child is None or self.stream is None or self.sock is None:
            return cp.Relayed(child_exit="no candidate process is open")
        deadline = time.monotonic() + max(timeout, 0.01)
        while True:  # in slices, so an engine that died mid-candidate takes the candidate with it
            ready, _, _ = select.select(
                [self.sock], [], [], max(min(deadline - time.monotonic(), 0.5), 0)
            )
            if ready:
                break
            if os.getppid() != self.parent:
                self._kill()
                os._exit(1)
            if time.monotonic() >= deadline:
                self._kill()
                return cp.Relayed(child_timeout=timeout)
        try:
            reply = protocol.read(self.stream)
        except (protocol.ProtocolError, OSError, ValueError) as exc:
            return cp.Relayed(child_protocol=str(exc)[:300], child_exit=self._reap())
        if reply is None:
            return cp.Relayed(child_exit=self._reap())
        return cp.Relayed(reply=reply)

    def _kill(self) -> None:
        if self.child is not None:
            _kill_group(self.child)
        self._reap()

    def _reap(self) -> str:
        how = "gone"
        if self.child is not None:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                pid, status = os.waitpid(self.child, os.WNOHANG)
                if pid:
                    how = (
                        f"signal {os.WTERMSIG(status)}"
                        if os.WIFSIGNALED(status)
                        else f"exit code {os.WEXITSTATUS(status)}"
                    )
                    break
                time.sleep(0.01)
            else:
                os.kill(self.child, signal.SIGKILL)
                os.waitpid(self.child, 0)
                how = "signal 9"
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.child, signal.SIGKILL)  # whatever it left in its group
        if self.sock is not None:
            self.sock.close()
        self.child = self.sock = self.stream = None
        return how

    def _end_child(self) -> tuple[int | None, list[str]]:
        """Kill the child and sweep what it left; no sweep when no candidate ran since the last
        one, so the files a waiting spare made (its CUDA start) are not pulled from under it."""
        was = self.child
        if was is not None:
            self._kill()
        if was is None and not self.dirty:
            return was, []
        self.dirty = False
        keep = frozenset([self.spare[0]]) if self.spare else frozenset()
        return was, self.leftovers.sweep(keep=keep)

    def close(
        self,
        final: bool = False,
        profiler: bool | None = None,
        later: bool = False,
        libraries: tuple[str, ...] | None = None,
    ) -> cp.Closed:
        """Kill the child, then every process it left (orphans reparent here) and every file it
        left in the places the next child shares: reuse of this host is clean by construction.
        Then the next spare is forked (none when `final`); `profiler`: whether the task just
        verified profiles its kernels, so the spare starts the profiler while it waits;
        `libraries`: the vendor libraries its candidate called, whose handles the spare makes.
        `later`: the child is killed now, but waiting for its end (a CUDA context takes ~0.08 s
        to tear down), the sweep and the spare are left to `settle()`, which the serving loop
        runs after the reply and before it reads the next request; `swept` is then empty."""
        if profiler is not None:
            self.profiler = profiler
        if libraries is not None:
            self.libraries = tuple(sorted(set(libraries) & set(spare_start.SPARE_LIBRARIES)))
        if later and not final and self.child is not None:
            _kill_group(self.child)
            self.settling = True
            return cp.Closed(closed=self.child)
        if final:
            self.drop_spare()
        was, swept = self._end_child()
        if not final:
            self._fork_spare()
        return cp.Closed(closed=was, swept=swept[:50])

    def pause(self, stop: bool) -> cp.Paused:
        """SIGSTOP (or SIGCONT) the open child's process group and every other process below this
        host but the spare (what left the group): stopped, nothing the candidate started can
        launch GPU work while another verdict's timing has the GPU alone (kernelevo/gpu_gate.py)."""
        from kernelevo.sandbox.watchdog import ProcessTable

        sig = signal.SIGSTOP if stop else signal.SIGCONT
        if self.child is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.child, sig)
        table = ProcessTable()
        spare = [self.spare[0]] if self.spare else []
        keep = {*spare, *(p for s in spare for p in table.below(s))}
        for round_ in range(2 if stop else 1):  # twice: a fork racing the first round is caught
            if round_:
                table = ProcessTable()
            for pid in table.below(os.getpid()):
                if pid not in keep:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, sig)
        return cp.Paused(child=self.child, stopped=stop and self.child is not None)

    def settle(self) -> None:
        """What a `close(later=True)` left: the child reaped, its leftovers swept, a spare forked."""
        if self.settling:
            self.settling = False
            self._end_child()
            self._fork_spare()


def _answer(host: Host, request: dict[str, Any]) -> dict[str, Any]:
    """The runner host's ops: the engine opens a child, relays a candidate's requests, closes it."""
    from kernelevo.worker import candidate_requests as cr
    from kernelevo.worker.protocol import RequestError

    try:
        req = cr.parse_host(request)
    except RequestError as exc:
        return {"error": str(exc)}
    if isinstance(req, cr.Ping):
        return cp.HostPong(pid=os.getpid(), child=host.child).wire()
    if isinstance(req, cr.Open):
        return host.open(set()).wire()
    if isinstance(req, cr.Close):
        profiler = None if req.profiler is None else bool(req.profiler)
        libraries = None if req.libraries is None else tuple(str(x) for x in req.libraries)
        return host.close(profiler=profiler, later=True, libraries=libraries).wire()
    if isinstance(req, cr.Pause):
        return host.pause(bool(req.stop)).wire()
    if isinstance(req, cr.Relay):
        relayed = dict(req.request or {})
        if isinstance(req.candidate_path, str):  # top level, where the pool maps it into the inbox
            relayed["candidate_path"] = req.candidate_path
        return host.relay(relayed, float(req.timeout or 60.0)).wire()
    return {"error": f"unknown op {req.op!r}"}


def serve() -> int:
    from kernelevo.runner.engine_pipe import serve_engine
    from kernelevo.runner.preload import preload

    return serve_engine("candidate", preload, _answer)


if __name__ == "__main__":
    raise SystemExit(serve())
