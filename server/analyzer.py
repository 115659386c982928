"""Targets of each document, cached per document version and kept current between analyses.

Detection runs in a separate process (`analysis_worker`): parsing holds the GIL for
hundreds of milliseconds on a large file, which would stall hovers. Edits are debounced;
between an edit and the next analysis, targets are shifted by the edit's line delta, so
lenses and hovers answer at once from the last analysis.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelevo_server.analysis_worker import Detect, Detected

from kernelevo.targets.model import Target
from kernelevo.worker import protocol

logger = logging.getLogger(__name__)

WORKER_COMMAND = [sys.executable, "-m", "kernelevo_server.analysis_worker"]
DEBOUNCE_S = 0.3
WORKER_TIMEOUT_S = 30.0


@dataclass
class TargetInfo(Target):
    """A detected target as the server keeps it between analyses (see docs/PROTOCOLS.md)."""

    edited: bool = False  # its text changed since the last analysis: source_hash is stale

    def contains_line(self, line: int) -> bool:
        return self.start_line <= line <= self.end_line

    def key(self) -> tuple:
        return (self.id, self.start_line, self.end_line, self.source_hash)


@dataclass
class DocState:
    uri: str
    path: str
    targets: list[TargetInfo] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    analyzed_version: Any = None  # document version the last analysis saw
    degraded: bool = (
        False  # last analysis failed (e.g. syntax error): targets are the last good ones
    )
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task | None = None
    debouncing: bool = False  # the pending task is still waiting out the debounce delay


class AnalysisWorker:
    """A long-lived analysis process; restarted if it dies or hangs."""

    def __init__(self, command: Sequence[str] | None = None, cwd: str | None = None) -> None:
        self.command = list(command or WORKER_COMMAND)
        self.cwd = cwd
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._seq = 0

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc and self._proc.returncode is None else None

    async def _ensure(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            env = dict(os.environ, PYTHONPATH=child_pythonpath())
            self._proc = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=None,
                cwd=self.cwd,
                env=env,
                limit=64 * 1024 * 1024,
            )
        return self._proc

    async def detect(self, path: str, source: str) -> tuple[list[TargetInfo], list[str]]:
        # Shielded: once a request is written its reply must be read, or the stream desyncs.
        return await asyncio.shield(self._detect(path, source))

    async def _detect(self, path: str, source: str) -> tuple[list[TargetInfo], list[str]]:
        async with self._lock:
            self._seq += 1
            try:
                proc = await self._ensure()
                assert proc.stdin and proc.stdout
                proc.stdin.write(
                    protocol.encode(Detect(id=self._seq, path=path, source=source).wire())
                )
                await proc.stdin.drain()
                frame = await asyncio.wait_for(_read_frame(proc.stdout), WORKER_TIMEOUT_S)
                reply = Detected.parse(frame)
                if reply.id != self._seq:
                    raise protocol.ProtocolError(f"reply {reply.id} to request {self._seq}")
            except (
                OSError,
                ConnectionError,
                EOFError,
                asyncio.TimeoutError,
                protocol.ProtocolError,
            ) as exc:
                logger.warning("analysis worker failed: %r; restarting it", exc)
                await self.close()
                return [], [f"target detection failed: {exc!r}"]
            if reply.traceback:
                logger.warning("detector error:\n%s", reply.traceback)
            return [TargetInfo.from_dict(t) for t in reply.targets], list(reply.errors)

    async def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        try:
            proc.kill()
            await asyncio.wait_for(proc.wait(), 5)
        except (ProcessLookupError, asyncio.TimeoutError):
            pass


async def _read_frame(stream: asyncio.StreamReader) -> dict[str, Any]:
    """One frame of the engine's framing from an asyncio stream (EOFError when the process ended)."""
    (size,) = protocol.HEADER.unpack(await stream.readexactly(protocol.HEADER.size))
    if size > protocol.MAX_FRAME:
        raise protocol.ProtocolError(f"frame of {size} bytes exceeds the limit")
    return protocol.decode(await stream.readexactly(size))


def child_pythonpath() -> str:
    """The worker imports `kernelevo` as this process does, even when run from elsewhere."""
    import kernelevo

    here = os.path.dirname(os.path.dirname(os.path.abspath(kernelevo.__file__)))
    parts = [here] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(parts))


def shift_targets(targets: list[TargetInfo], start_line: int, end_line: int, new_text: str) -> None:
    """Move targets for one incremental edit that replaced lines start_line..end_line with new_text."""
    delta = new_text.count("\n") - (end_line - start_line)
    for t in targets:
        if end_line < t.start_line:
            t.start_line += delta
            t.end_line += delta
        elif start_line > t.end_line:
            continue
        else:
            t.edited = True
            if start_line < t.start_line:
                t.start_line = start_line
            t.end_line = max(t.start_line, t.end_line + delta)


TextSource = Callable[[str], "tuple[str, Any, str] | None"]  # uri -> (text, version, path)
OnUpdate = Callable[[DocState, bool], None]  # (state, targets changed)


class Analyzer:
    def __init__(
        self,
        worker: AnalysisWorker,
        text_source: TextSource,
        on_update: OnUpdate,
        debounce_s: float = DEBOUNCE_S,
    ) -> None:
        self.worker = worker
        self._text = text_source
        self._on_update = on_update
        self.debounce_s = debounce_s
        self._docs: dict[str, DocState] = {}

    def state(self, uri: str) -> DocState | None:
        return self._docs.get(uri)

    def documents(self) -> dict[str, DocState]:
        return dict(self._docs)

    def _get(self, uri: str) -> DocState | None:
        st = self._docs.get(uri)
        if st is None:
            got = self._text(uri)
            if got is None:
                return None
            st = self._docs[uri] = DocState(uri=uri, path=got[2])
        return st

    # -- document events ----------------------------------------------------------------
    def opened(self, uri: str) -> None:
        st = self._get(uri)
        if st is not None:
            self._schedule(st, 0.0)

    def changed(self, uri: str, content_changes: Sequence[Any]) -> None:
        st = self._get(uri)
        if st is None:
            return
        for change in content_changes:
            rng = getattr(change, "range", None)
            if rng is None:
                for t in st.targets:
                    t.edited = True
            else:
                shift_targets(st.targets, rng.start.line, rng.end.line, change.text)
        self._schedule(st, self.debounce_s)

    def closed(self, uri: str) -> None:
        st = self._docs.pop(uri, None)
        if st and st.task and not st.task.done():
            st.task.cancel()

    def invalidate_disk(self, path: str) -> None:
        """A file not open in the editor changed on disk: forget its analysis."""
        for uri, st in list(self._docs.items()):
            if st.path == path and st.task is None:
                self._docs.pop(uri, None)

    # -- queries --------------------------------------------------------------------------
    async def current(self, uri: str, timeout: float = 10.0) -> DocState | None:
        """The latest targets, shifted for edits since; waits only for a document's first analysis."""
        st = self._get(uri)
        if st is None:
            return None
        if not st.ready.is_set():
            if st.task is None or st.task.done():
                self._schedule(st, 0.0)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(st.ready.wait(), timeout)
        return st

    async def fresh(self, uri: str) -> DocState | None:
        """Targets of exactly the current text (for actions that hash or rewrite a target)."""
        st = self._get(uri)
        if st is None:
            return None
        for _ in range(5):
            got = self._text(uri)
            if got is None:
                return None
            if st.analyzed_version == got[1] and (st.task is None or st.task.done()):
                return st
            if st.task is None or st.task.done() or st.debouncing:
                self._schedule(st, 0.0)
            task = st.task
            assert task is not None
            await asyncio.wait({task})
        return st

    # -- internals ------------------------------------------------------------------------
    def _schedule(self, st: DocState, delay: float) -> None:
        if st.task is not None and not st.task.done():
            st.task.cancel()
        st.debouncing = delay > 0
        st.task = asyncio.get_running_loop().create_task(self._run(st, delay))

    async def _run(self, st: DocState, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        st.debouncing = False
        got = self._text(st.uri)
        if got is None:
            return
        text, version, path = got
        targets, errors = await self.worker.detect(path, text)
        now = self._text(st.uri)
        if now is None or now[1] != version or self._docs.get(st.uri) is not st:
            return  # the document moved on; a newer analysis is scheduled
        before = [t.key() for t in st.targets]
        if errors and not targets and st.targets:
            st.degraded = True  # keep the last good targets rather than blank the lenses
        else:
            st.targets, st.degraded = targets, False
        st.errors = errors
        st.analyzed_version = version
        first = not st.ready.is_set()
        st.ready.set()
        changed = first or before != [t.key() for t in st.targets]
        try:
            self._on_update(st, changed)
        except Exception:
            logger.exception("analysis update handler failed")

    async def close(self) -> None:
        for st in self._docs.values():
            if st.task and not st.task.done():
                st.task.cancel()
        await self.worker.close()
