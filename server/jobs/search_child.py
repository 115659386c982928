"""Run one search child process: its own process group, JSON-lines progress, clean stop.

The child (`kernelevo optimize ... --progress json`) prints one JSON event per line
(docs/PROTOCOLS.md), each parsed back into its record (kernelevo/search/events.py); a line that
is no event is logged and skipped. Cancelling the awaiting task sends SIGTERM to the whole group (the
search stops its workers and records "cancelled"), then SIGKILL after a grace period;
whatever is left of the group is killed when the leader exits, so no worker outlives
its job. A child that crashes ends its job as "failed"; the server carries on.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kernelevo.search.events import Done, SearchEvent, SearchFailed, parse_line
from kernelevo.worker.protocol import ProtocolError

logger = logging.getLogger(__name__)

GRACE_S = 5.0
_STDERR_TAIL_LINES = 40
_live_groups: set[int] = set()


@dataclass
class Outcome:
    returncode: int | None
    done: Done | None = None  # the child's last word, if it sent one
    errors: list[str] = field(default_factory=list)  # its SearchFailed messages
    stderr_tail: str = ""


def _signal_group(pid: int, sig: int) -> None:
    try:
        if sys.platform == "win32":
            os.kill(pid, sig)
        else:
            os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_all_groups() -> None:
    """Last resort at interpreter exit: no search outlives the server."""
    for pid in list(_live_groups):
        _kill_group(pid)
    _live_groups.clear()


async def run_search(
    command: Sequence[str],
    *,
    on_event: Callable[[SearchEvent], None],
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    grace_s: float = GRACE_S,
    on_start: Callable[[int], None] | None = None,
) -> Outcome:
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
        limit=16 * 1024 * 1024,
        start_new_session=(sys.platform != "win32"),
    )
    _live_groups.add(proc.pid)
    if on_start is not None:
        on_start(proc.pid)
    outcome = Outcome(returncode=None)
    tail: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)

    async def read_stdout() -> None:
        assert proc.stdout
        async for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                event = parse_line(line)
            except ProtocolError as exc:
                logger.warning("search stdout, not an event (%s): %s", exc, line[:300])
                continue
            if isinstance(event, Done):
                outcome.done = event
            elif isinstance(event, SearchFailed):
                outcome.errors.append(event.message)
            try:
                on_event(event)
            except Exception:
                logger.exception("progress handler failed")

    async def read_stderr() -> None:
        assert proc.stderr
        async for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            tail.append(line)
            logger.debug("search[%d]: %s", proc.pid, line)

    readers = asyncio.gather(read_stdout(), read_stderr())
    try:
        # Not proc.wait(): it also waits for the pipes, which a stray grandchild may hold open.
        while proc.returncode is None and not readers.done():
            await asyncio.wait({readers}, timeout=0.1)
        try:
            await asyncio.wait_for(asyncio.shield(readers), 2.0)
        except asyncio.TimeoutError:
            _kill_group(proc.pid)
            await asyncio.wait({readers}, timeout=2.0)
            readers.cancel()
        while proc.returncode is None:
            await asyncio.sleep(0.05)
        outcome.returncode = proc.returncode
    except asyncio.CancelledError:
        await _stop(proc, grace_s)
        await asyncio.wait(
            {readers}, timeout=1.0
        )  # keep the child's last events ("done", cancelled)
        readers.cancel()
        raise
    finally:
        _kill_group(proc.pid)
        _live_groups.discard(proc.pid)
        outcome.stderr_tail = "\n".join(tail)
    return outcome


def _kill_group(pid: int) -> None:
    _signal_group(pid, getattr(signal, "SIGKILL", signal.SIGTERM))


async def _stop(proc: asyncio.subprocess.Process, grace_s: float) -> None:
    if proc.returncode is not None:
        return
    _signal_group(proc.pid, signal.SIGTERM)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while proc.returncode is None and loop.time() < deadline:
        await asyncio.sleep(0.05)
    if proc.returncode is None:
        logger.warning("search %d ignored SIGTERM for %.0f s; killing it", proc.pid, grace_s)
        _kill_group(proc.pid)
        while proc.returncode is None:
            await asyncio.sleep(0.05)


class GpuSlots:
    """At most `limit` running jobs per GPU key; the limit may change between acquisitions."""

    def __init__(self) -> None:
        self._busy: dict[str, int] = {}
        self._cond = asyncio.Condition()

    def busy(self, key: str) -> int:
        return self._busy.get(key, 0)

    async def acquire(self, key: str, limit: Callable[[], int]) -> None:
        async with self._cond:
            await self._cond.wait_for(lambda: self._busy.get(key, 0) < max(1, limit()))
            self._busy[key] = self._busy.get(key, 0) + 1

    async def release(self, key: str) -> None:
        async with self._cond:
            self._busy[key] = max(0, self._busy.get(key, 0) - 1)
            self._cond.notify_all()
