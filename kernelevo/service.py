"""The verification service: one warm Evaluator per workspace and device that `kernelevo verify` calls share.

A fresh `kernelevo verify` pays for three worker processes importing torch (and, on a GPU,
CUDA start-up and the judge's warm-up) before it judges anything; a search pays that once.
The service is that search's Evaluator kept alive between commands: the CLI (and anything
else that verifies in the workspace) sends it a request over a Unix socket and gets the
verdict back; after `idle_s` without a request it closes its workers and exits.

The socket lives in a folder only the user can enter (0700), and the service answers only
peers of its own uid. Its address is derived from everything that decides a verdict besides
the request: the workspace, the device, the kernelevo code (its folder and newest file) and the
interpreter in use, and the cache folders, so two checkouts, two settings or edited code never
share a service. One service per address: it holds a lock beside its socket for its whole life,
so two starts never leave two. A service no client can reach any more (its socket removed or
replaced, or the code or settings its address hashes changed) exits within TICK_S seconds rather
than holding its workers (and a GPU's memory) until idle. `stop` replies once every worker it
started is closed. Candidates still run
only in the Evaluator's sandboxed workers; the service itself is the engine, and refuses to
start unsandboxed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from kernelevo.worker import protocol
from kernelevo.worker.protocol import Request, RequestError, RequestKinds

IDLE_S = 600.0
TICK_S = 2.0  # how often a waiting service checks that it is still the one its address reaches
MAX_REQUEST = 1 << 20
READ_S = 5.0  # a client sends as soon as it connects: a silent one is dropped after this
_ENV_KEYS = (
    "KERNELEVO_CACHE",
    "KERNELEVO_STATE",
    "TRITON_CACHE_DIR",
    "TORCH_EXTENSIONS_DIR",
    "TORCHINDUCTOR_CACHE_DIR",
    "CUDA_VISIBLE_DEVICES",
    "KERNELEVO_STORE",
)


class ServiceError(Exception):
    """The service could not be reached or answered something that is not a reply."""


@dataclass(frozen=True)
class ServiceRequest(Request):
    pass


SERVICE: RequestKinds[ServiceRequest] = RequestKinds()


@SERVICE.kind("ping")
@dataclass(frozen=True)
class Ping(ServiceRequest):
    """Is a service there, and how warm: answered with a `Pong`."""


@SERVICE.kind("stop")
@dataclass(frozen=True)
class Stop(ServiceRequest):
    """Close every worker, then answer `Stopped` and exit."""


@SERVICE.kind("verify")
@dataclass(frozen=True)
class Verify(ServiceRequest):
    """`kernelevo verify`'s arguments (absolute paths), answered with a `Judged`."""

    task: str
    candidate: str
    store: str | None = None
    size: str | None = None
    timeout: float | None = None
    seed: int | None = None
    use_cache: bool = True
    strict: bool = False
    precision: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Pong:
    pid: int
    served: int = 0
    up_s: float = 0.0
    workers: dict[str, int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Judged:
    """A verify request's answer: the verdict as data, or why there is none (the task's own error,
    said to the user in one line; or the request's or the engine's failure)."""

    verdict: dict[str, Any] | None = None
    task_error: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Stopped:
    stopped: bool = True


Reply = Pong | Judged | Stopped
_REPLIES: dict[type[ServiceRequest], type[Reply]] = {Ping: Pong, Verify: Judged, Stop: Stopped}


def address(workspace: str | Path, device: str) -> Path:
    from kernelevo import __version__
    from kernelevo.sandbox.mounts import package_root

    code = package_root() / "kernelevo"
    newest = max((f.stat().st_mtime_ns for f in code.rglob("*.py")), default=0)  # edited code
    parts = [str(Path(workspace).resolve()), device, str(code), str(newest), sys.executable]
    parts.append(__version__)
    parts += [f"{k}={os.environ.get(k, '')}" for k in _ENV_KEYS]
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]
    return (
        Path(os.environ.get("KERNELEVO_RUN_DIR") or f"/tmp/kernelevo-{os.getuid()}")
        / f"{digest}.sock"
    )


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise ServiceError(
            f"{path} is not private to this user; remove it or set KERNELEVO_RUN_DIR"
        )


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(protocol.encode(message))


def _receive(conn: socket.socket, limit: int = protocol.MAX_FRAME) -> dict[str, Any]:
    try:
        message = protocol.read(conn.makefile("rb"), limit)
    except protocol.ProtocolError as exc:  # too long, cut short, or not msgpack
        raise ServiceError(str(exc)) from exc
    if not isinstance(message, dict):
        raise ServiceError("the other side closed the connection without a message")
    return message


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[2]


@overload
def request(workspace: str | Path, device: str, req: Ping, timeout: float) -> Pong: ...
@overload
def request(workspace: str | Path, device: str, req: Verify, timeout: float) -> Judged: ...
@overload
def request(workspace: str | Path, device: str, req: Stop, timeout: float) -> Stopped: ...
def request(workspace: str | Path, device: str, req: ServiceRequest, timeout: float) -> Reply:
    """One request to the running service, answered with its reply record (`Pong` for `Ping`,
    `Judged` for `Verify`, `Stopped` for `Stop`); ServiceError where none answers."""
    path = address(workspace, device)
    if not path.exists():
        raise ServiceError("no service running")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(str(path))
        _send(conn, req.wire())
        got = _receive(conn)
    except OSError as exc:
        raise ServiceError(f"the service did not answer: {exc}") from exc
    finally:
        conn.close()
    if "error" in got and type(req) is not Verify:
        raise ServiceError(f"the service refused the request: {got['error']}")
    try:
        return _REPLIES[type(req)](**got)
    except TypeError as exc:
        raise ServiceError(f"the service's reply is not a {req.op} reply: {exc}") from None


@dataclass(frozen=True)
class Running:
    """The service answering at the address after `start`: this call's, or one that another command
    started at the same moment (then this call's process left it the address)."""

    pid: int
    started_here: bool


def start(
    workspace: str | Path, device: str, idle_s: float = IDLE_S, wait_s: float = 180.0
) -> Running:
    """Start the service in the background (its own session, so it outlives this command) and wait
    until one answers. The log is .kernelevo/service.log in the workspace."""
    ws = Path(workspace).resolve()
    log_dir = ws / ".kernelevo"
    try:
        log_dir.mkdir(exist_ok=True)
        log = open(log_dir / "service.log", "ab")  # noqa: SIM115 (handed to the child)
    except OSError as exc:
        raise ServiceError(f"cannot write {log_dir}: {exc}") from exc
    cmd = [sys.executable, "-m", "kernelevo.service", str(ws), device, str(idle_s)]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, cwd=str(ws)
    )
    log.close()
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        exited = proc.poll() not in (None, 0)  # 0: another service holds the address; wait for it
        try:
            return _running(request(ws, device, Ping(), 5).pid, proc.pid)
        except ServiceError:
            if exited:
                raise ServiceError(
                    f"the verification service exited at start (code {proc.returncode}); "
                    f"see {log_dir / 'service.log'}"
                ) from None
            time.sleep(0.2)
    raise ServiceError(f"the verification service did not answer within {wait_s:.0f} s")


def _running(pid: int, spawned: int) -> Running:
    return Running(int(pid), started_here=int(pid) == spawned)


def verify_request(req: Verify, ev: Any) -> Judged:
    """A verify request judged with the warm evaluator; the reply is data (the verdict as a dict)."""
    from kernelevo.store import Store
    from kernelevo.task import TaskError
    from kernelevo.verify import verify_candidate

    try:
        verdict = verify_candidate(
            req.task,
            req.candidate,
            evaluator=ev,
            store=Store(req.store) if req.store else None,
            device=ev.device,
            size=req.size,
            timeout=req.timeout,
            seed=req.seed,
            use_cache=req.use_cache,
            strict=req.strict,
            precision=tuple(str(p) for p in req.precision),
        )
    except TaskError as exc:
        return Judged(task_error=str(exc))
    except (TypeError, ValueError) as exc:
        return Judged(error=f"malformed request: {exc}")
    return Judged(verdict=verdict.to_dict())


def serve(workspace: str | Path, device: str, idle_s: float = IDLE_S) -> int:
    from kernelevo.evaluate import Evaluator
    from kernelevo.sandbox.probe import use_sandbox
    from kernelevo.sandbox.sandbox_process import SandboxError

    try:
        if not use_sandbox():
            print("kernelevo service: refusing to serve unsandboxed candidates", file=sys.stderr)
            return 2
    except SandboxError as exc:
        print(f"kernelevo service: {exc}", file=sys.stderr)
        return 2
    path = address(workspace, device)
    _private_dir(path.parent)
    lock = _take_address(workspace, device, path)
    if lock is None:
        return 0  # another service holds this address
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        path.unlink(missing_ok=True)  # the lock is ours: a socket here is a dead service's
        listener.bind(str(path))
        bound = path.stat().st_ino
    except OSError as exc:
        print(f"kernelevo service: cannot listen on {path}: {exc}", file=sys.stderr)
        return 2
    listener.listen(16)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stopped: the workers and socket go too
    served, started, last = 0, time.time(), time.monotonic()
    ev = None
    try:
        # the first call waits for this start: no torch.compile warm-up (baselines are kept per task
        # on disk; a task's first timing pays it), which on the H200 made the first call 22 s, not 15
        ev = Evaluator(device, warmup="light")
        ev.start_soon()  # the first call's requests each wait only for the worker they go to
        listener.settimeout(min(TICK_S, idle_s))
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if time.monotonic() - last >= idle_s:
                    break  # idle: give the workers (and the GPU's memory) back
                if not _still_reached(workspace, device, path, bound):
                    break  # no client can reach this service any more
                continue
            last = time.monotonic()
            with conn:
                conn.settimeout(READ_S)
                try:
                    if _peer_uid(conn) != os.getuid():
                        continue
                    message = _receive(conn, MAX_REQUEST)
                except (OSError, ServiceError):
                    continue
                try:
                    call = SERVICE.parse(message)
                except RequestError as exc:
                    with contextlib.suppress(OSError):
                        _send(conn, {"error": str(exc)})
                    continue
                reply: Reply
                if isinstance(call, Ping):
                    workers = {
                        n: w.proc.pid if w.alive and w.proc is not None else None
                        for n, w in ev.owned_workers()
                    }
                    reply = Pong(os.getpid(), served, time.time() - started, workers)
                elif isinstance(call, Verify):
                    served += 1
                    try:
                        reply = verify_request(call, ev)
                    except Exception as exc:  # the engine's own failure: said; the service goes on
                        reply = Judged(error=f"{type(exc).__name__}: {exc}"[:2000])
                else:  # Stop, replied once the workers are gone: stopped means stopped
                    _close(listener, path, bound, ev)
                    ev = None
                    with contextlib.suppress(OSError):
                        _send(conn, vars(Stopped()))
                    break
                with contextlib.suppress(OSError):  # the client went away; the verdict is stored
                    _send(conn, vars(reply))
    finally:
        _close(listener, path, bound, ev)
        lock.close()
    return 0


def _take_address(workspace: str | Path, device: str, path: Path, wait_s: float = 180.0) -> Any:
    """The address's lock file, held open (and locked) for the service's life; None where another
    service answers there. A holder that does not answer is starting or closing: waited for."""
    lock = open(path.with_suffix(".lock"), "ab")  # noqa: SIM115 (held until the service exits)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return lock
        except BlockingIOError:
            pass
        try:
            request(workspace, device, Ping(), 5)
            lock.close()
            return None
        except ServiceError:
            if time.monotonic() > deadline:
                lock.close()
                return None
            time.sleep(0.2)


def _still_reached(workspace: str | Path, device: str, path: Path, bound: int) -> bool:
    """Whether clients still reach this service: its socket is the one it bound, and the address
    (which hashes the code's newest file and the settings) is unchanged."""
    try:
        return path.stat().st_ino == bound and address(workspace, device) == path
    except OSError:
        return False


def _close(listener: socket.socket, path: Path, bound: int, ev: Any) -> None:
    """No new client reaches the service (its own socket only is removed), then its workers go."""
    listener.close()
    with contextlib.suppress(OSError):
        if path.stat().st_ino == bound:
            path.unlink()
    if ev is not None:
        ev.close()


if __name__ == "__main__":
    raise SystemExit(
        serve(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else IDLE_S)
    )
