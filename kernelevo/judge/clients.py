"""The engine's two channels: to the judge process, and to a candidate process through the runner host.

What comes back from the judge is trusted only when it carries the nonce the engine
sent; what comes back from a candidate process is data (descriptors, counts, its own
failure), and any failure it reports, or a crash, a time limit or a harness patch, is
the candidate's.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from typing import Any, TypeVar, cast

from kernelevo.judge.requests import JudgeRequest
from kernelevo.task import TaskError
from kernelevo.worker import candidate_replies as cp
from kernelevo.worker import candidate_requests as cr
from kernelevo.worker.pool import Worker, WorkerError
from kernelevo.worker.protocol import ProtocolError, Reply

R = TypeVar("R", bound=Reply)

CANDIDATE_FAILURES = ("incorrect", "compile_error", "runtime_error", "rejected", "unverified")


class CandidateFailed(Exception):
    """`lost`: the runner host was lost (WorkerError.lost), so the failure is not the candidate's."""

    def __init__(self, status: str, reason: str, log: str = "", *, lost: bool = False) -> None:
        super().__init__(reason)
        self.status = (
            status if status in CANDIDATE_FAILURES or status == "timeout" else "runtime_error"
        )
        self.reason, self.log, self.lost = reason, log, lost


class JudgeFailed(Exception):
    """The judge process itself failed (crashed, answered without the nonce, ran out of memory);
    `lost`: taken from outside (WorkerError.lost); `timed_out`: stopped at its time limit."""

    def __init__(self, message: str, *, lost: bool = False, timed_out: bool = False) -> None:
        super().__init__(message)
        self.lost, self.timed_out = lost, timed_out


def _spend(spent: dict[str, float], op: str, since: float) -> None:
    """Seconds per op, round trip included: where a verdict's time goes (bench/profile_verdict.py)."""
    spent[op] = round(spent.get(op, 0.0) + time.perf_counter() - since, 4)


class JudgeClient:
    def __init__(self, worker: Worker, timeout: float) -> None:
        self.worker, self.timeout = worker, timeout
        self.spent: dict[str, float] = {}

    def ask(self, request: JudgeRequest[R], timeout: float | None = None) -> R:
        """The judge's answer to `request`, as the reply record the request names."""
        op, nonce = request.op, secrets.token_hex(16)
        t0 = time.perf_counter()
        try:
            reply = self.worker.request({**request.wire(), "nonce": nonce}, timeout or self.timeout)
        except WorkerError as exc:
            raise JudgeFailed(
                f"the judge process {'timed out' if exc.kind == 'timeout' else 'crashed'} during "
                f"{op}: {exc}",
                lost=exc.lost,
                timed_out=exc.kind == "timeout",
            ) from exc
        finally:
            _spend(self.spent, op, t0)
        if reply.get("nonce") != nonce:
            self.worker.kill()  # its pipe carried a frame it did not write: start a fresh one
            raise JudgeFailed(
                f"a reply to {op} did not come from the judge (wrong nonce); the channel was tampered with"
            )
        if "task_error" in reply:
            raise TaskError(reply["task_error"])
        if "error" in reply or "channel_error" in reply:
            raise JudgeFailed(f"judge {op}: {reply.get('error') or reply.get('channel_error')}")
        kind = type(request).reply
        if kind is None:
            raise JudgeFailed(f"judge {op}: the request names no reply record")
        try:
            return cast(R, kind.parse(reply))
        except ProtocolError as exc:
            raise JudgeFailed(f"judge {op}: a malformed reply ({exc})") from None


class CandidateClient:
    """One candidate process at a time, forked fresh by the runner host on `open`."""

    def __init__(self, host: Worker, timeout: float) -> None:
        self.host, self.timeout = host, timeout
        self.open_pid: int | None = None
        self.ready_s: float | None = None  # how long the last open waited for the process to start
        self.from_spare = False  # the last open handed out a spare started ahead
        self.spent: dict[str, float] = {}

    def _request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        nonce = secrets.token_hex(16)
        reply = self.host.request({**message, "nonce": nonce}, timeout)
        if reply.get("nonce") != nonce:
            self.host.kill()  # the pipe carried a frame the host did not write: a fresh host for the next one
            raise CandidateFailed(
                "rejected",
                "a frame on the runner's channel did not come from the runner host: "
                "the candidate forged protocol frames",
            )
        return reply

    def settled(self) -> None:
        """Wait until the runner host has removed what the last candidate left. It answers
        `close` at once and only then kills the processes that escaped the candidate's group and
        sweeps their files, before it reads its next request: its answer to a ping means that is
        done. Until then a daemon the last candidate left could write into this one's build cache
        or exchange folder. A host that cannot answer is replaced, and everything in its sandbox
        ends with it."""
        if not self.host.alive:
            return
        t0 = time.perf_counter()
        try:
            self._request(cr.Ping().wire(), 60)
        except (WorkerError, CandidateFailed):
            self.host.kill()
        finally:
            _spend(self.spent, "settled", t0)

    def open(self) -> None:
        t0 = time.perf_counter()
        try:
            reply = self._request(cr.Open().wire(), 60)
        except WorkerError as exc:
            raise CandidateFailed(
                "runtime_error", f"the candidate process could not start: {exc}", lost=exc.lost
            ) from exc
        finally:
            _spend(self.spent, "open", t0)
        try:
            opened = cp.Opened.parse(reply)
            self.open_pid, self.ready_s = opened.opened, opened.ready_s
            self.from_spare = opened.spare
        except ProtocolError as exc:
            raise CandidateFailed(
                "runtime_error", f"the runner host answered open with malformed data: {exc}"
            ) from None

    def pause(self, stop: bool) -> None:
        """Stop or resume the open candidate process (and what it started) while another
        verdict times on this GPU. A runner host that cannot do it fails the candidate."""
        t0 = time.perf_counter()
        try:
            cp.Paused.parse(self._request(cr.Pause(stop=stop).wire(), 30))
        except (WorkerError, ProtocolError) as exc:
            raise CandidateFailed(
                "runtime_error",
                f"the runner host could not {'stop' if stop else 'resume'} the candidate process: {exc}",
                lost=getattr(exc, "lost", False),
            ) from None
        finally:
            _spend(self.spent, "pause" if stop else "resume", t0)

    def ask(self, request: cr.CandidateRequest[R], when: str, timeout: float | None = None) -> R:
        """The candidate process's answer to `request`, as the record the request names; any
        failure it reports, a crash, a time limit, a harness patch or a malformed answer is the
        candidate's (CandidateFailed)."""
        limit, op = timeout or self.timeout, request.op
        t0 = time.perf_counter()
        try:
            fields = request.wire()
            path = fields.pop("candidate_path", None)  # at the top, where the pool's inbox maps it
            outer = self._request(
                cr.Relay(request=fields, timeout=limit, candidate_path=path).wire(), limit + 30
            )
        except WorkerError as exc:
            raise CandidateFailed(
                "timeout" if exc.kind == "timeout" else "runtime_error",
                f"the runner host failed while {when}: {exc}",
                exc.log,
                lost=exc.lost,
            ) from exc
        finally:
            _spend(self.spent, op, t0)
        try:
            relayed = cp.Relayed.parse(outer)
        except ProtocolError as exc:
            raise CandidateFailed(
                "runtime_error", f"the runner host answered {when} with malformed data: {exc}"
            ) from None
        if relayed.child_timeout is not None:
            raise CandidateFailed(
                "timeout",
                f"time limit of {limit:.0f} s reached while {when}; the candidate process "
                "was stopped (infinite loop or hang?)",
                self.host.log_tail(),
            )
        if relayed.child_exit is not None:
            how = relayed.child_exit
            what = (
                f"was killed by {how} (out of memory, or killed from outside)"
                if how == "signal 9"
                else f"crashed ({how})"
                if how.startswith("signal")
                else f"exited ({how})"
            )
            raise CandidateFailed(
                "runtime_error", f"the candidate process {what} while {when}", self.host.log_tail()
            )
        reply = relayed.reply
        if not isinstance(reply, dict):
            raise CandidateFailed(
                "runtime_error", f"the candidate process answered {when} with no data"
            )
        if reply.get("integrity_violation"):
            patched = [str(p)[:120] for p in reply["integrity_violation"]][:5]
            raise CandidateFailed(
                "rejected",
                f"the candidate left the harness altered ({', '.join(patched)}); "
                "patching the harness or leaving threads behind is not allowed",
            )
        kind = type(request).reply
        try:
            if kind is None:
                raise ProtocolError(f"{op} names no reply record")
            answer = cast(R, kind.parse(reply))
        except ProtocolError as exc:
            raise CandidateFailed(
                "rejected", f"the candidate process answered {when} with malformed data: {exc}"
            ) from None
        failure = getattr(answer, "failure", None)
        if isinstance(failure, dict):
            raise CandidateFailed(
                str(failure.get("status")),
                str(failure.get("reason"))[:3000],
                str(failure.get("log") or "")[-3000:],
            )
        error = getattr(answer, "error", None)
        if error is not None:
            raise CandidateFailed(
                "runtime_error", f"the candidate process failed while {when}: {str(error)[:800]}"
            )
        return answer

    def close(self, profiler: bool | None = None, libraries: list[str] | None = None) -> None:
        """`profiler`: whether the task's verdicts profile kernels (None: not known yet), so the
        next spare child starts the profiler while it waits; `libraries`: the vendor libraries
        the candidate called, whose handles the next spare makes (None: not known)."""
        t0 = time.perf_counter()
        if self.open_pid is not None and self.host.alive:
            with contextlib.suppress(WorkerError, CandidateFailed):
                self._request(cr.Close(profiler=profiler, libraries=libraries).wire(), 30)
        self.open_pid = None
        _spend(self.spent, "close", t0)
