"""The language server object and its wiring: state, document sync, settings, refreshes.

Each LSP feature lives in its own module under `server/features/` and registers its
handlers on the server; this module holds what they share.
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kernelevo_server import settings as settings_mod
from kernelevo_server.analyzer import AnalysisWorker, Analyzer, DocState, TargetInfo
from kernelevo_server.applied import Applications
from kernelevo_server.jobs.manager import Job, JobChanged, JobEvent, JobManager
from kernelevo_server.jobs.search_child import kill_all_groups
from kernelevo_server.results import ResultsCache
from kernelevo_server.rpc_faults import KernelEvoProtocol, answer_unreadable_frame
from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from kernelevo import __version__
from kernelevo.search.events import ProgressEvent, Started

logger = logging.getLogger(__name__)

_LENS_REFRESH_MIN_S = 1.0


class KernelEvoServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("kernelevo", __version__, protocol_cls=KernelEvoProtocol)
        self.settings = settings_mod.Settings()
        self.analysis = Analyzer(AnalysisWorker(), self._text_of, self._analysis_updated)
        self.results = ResultsCache(self.settings.store_path(None))
        self.jobs = JobManager(
            lambda: self.settings.maxJobsPerGpu, self._job_event, self._job_ended
        )
        self.job_listeners: list[Callable[[Job, JobEvent], None]] = []
        self.store_listeners: list[Callable[[], None]] = []
        self.analysis_listeners: list[Callable[[DocState], None]] = []
        self.settings_listeners: list[Callable[[], None]] = []
        self.initialized_hooks: list[Callable[[], Awaitable[None]]] = []
        self.stop_hooks: list[Callable[[], None]] = []
        self.applications = Applications(self)
        self.analysis_listeners.append(self.applications.document_analyzed)
        self._lens_refresh_at = 0.0
        self._lens_refresh_pending: asyncio.TimerHandle | None = None
        self._store_debounce: asyncio.TimerHandle | None = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        if answer_unreadable_frame(self.protocol, error):
            return
        super().report_server_error(error, source)

    # -- capabilities -----------------------------------------------------------------------
    def supports(self, field: str) -> bool:
        caps = getattr(self.protocol, "client_capabilities", None)
        return bool(caps and get_capability(caps, field, False))

    def supports_resource_operation(self, kind: types.ResourceOperationKind) -> bool:
        we = getattr(getattr(self.client_capabilities, "workspace", None), "workspace_edit", None)
        return kind in list(getattr(we, "resource_operations", None) or [])

    @property
    def position_encoding(self) -> str:
        try:
            return str(self.workspace.position_encoding)
        except Exception:
            return types.PositionEncodingKind.Utf16

    # -- documents --------------------------------------------------------------------------
    @property
    def root_path(self) -> str | None:
        try:
            return self.workspace.root_path
        except RuntimeError:
            return None

    def path_of(self, uri: str) -> str:
        return to_fs_path(uri) or uri

    def open_document(self, uri: str) -> TextDocument | None:
        try:
            docs = self.workspace.text_documents
        except RuntimeError:
            return None
        doc = docs.get(uri)
        if doc is None:
            path = self.path_of(uri)
            doc = next((d for d in docs.values() if d.path == path), None)
        return doc

    def _text_of(self, uri: str) -> tuple[str, Any, str] | None:
        """(text, version, path): the editor's text when open, else the file on disk."""
        doc = self.open_document(uri)
        if doc is not None:
            return doc.source, ("open", doc.version), doc.path
        path = self.path_of(uri)
        try:
            st = os.stat(path)
            with open(path, encoding="utf-8") as fh:
                return fh.read(), ("disk", st.st_mtime_ns, st.st_size), path
        except (OSError, UnicodeDecodeError):
            return None

    async def target_at(self, uri: str, line: int) -> TargetInfo | None:
        st = await self.analysis.current(uri)
        if st is None:
            return None
        inside = [t for t in st.targets if t.contains_line(line)]
        return min(inside, key=lambda t: t.end_line - t.start_line) if inside else None

    # -- settings ----------------------------------------------------------------------------
    def update_settings(self, options: Any, *, trusted: bool) -> None:
        new, warnings = settings_mod.merge(self.settings, options, trusted=trusted)
        for w in warnings:
            self.show(w, types.MessageType.Warning)
        self.settings = new
        self.results.set_store_path(new.store_path(self.root_path))
        for listener in list(self.settings_listeners):
            listener()

    # -- messages and refreshes --------------------------------------------------------------
    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(
            types.ShowMessageParams(type=kind, message=f"KernelEvo: {message}")
        )

    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def refresh_lenses(self, *, throttle: bool = False) -> None:
        """Ask the client to re-request code lenses (when it supports that)."""
        if not self.supports("workspace.code_lens.refresh_support"):
            return
        loop = asyncio.get_running_loop()
        wait = self._lens_refresh_at + _LENS_REFRESH_MIN_S - time.monotonic()
        if throttle and wait > 0:
            if self._lens_refresh_pending is None:
                self._lens_refresh_pending = loop.call_later(wait, self._send_lens_refresh)
            return
        self._send_lens_refresh()

    def _send_lens_refresh(self) -> None:
        self._lens_refresh_pending = None
        self._lens_refresh_at = time.monotonic()
        fut = self.protocol.send_request(types.WORKSPACE_CODE_LENS_REFRESH, None)
        fut.add_done_callback(_log_failure)

    def store_changed(self) -> None:
        """Results changed outside this process (or a job ended): re-read, then refresh views."""
        loop = asyncio.get_running_loop()
        if self._store_debounce is not None:
            self._store_debounce.cancel()
        self._store_debounce = loop.call_later(0.2, self._store_changed_now)

    def _store_changed_now(self) -> None:
        self._store_debounce = None
        self.results.invalidate()
        for listener in list(self.store_listeners):
            listener()
        self.refresh_lenses()

    def _analysis_updated(self, st: DocState, changed: bool) -> None:
        for listener in list(self.analysis_listeners):
            listener(st)
        if changed:
            self.refresh_lenses(throttle=True)

    def _job_event(self, job: Job, event: JobEvent) -> None:
        for listener in list(self.job_listeners):
            listener(job, event)
        if isinstance(event, (Started, ProgressEvent, JobChanged)):
            self.refresh_lenses(throttle=True)

    def _job_ended(self, job: Job) -> None:
        for listener in list(self.job_listeners):
            listener(job, JobChanged("ended"))
        self.results.invalidate()
        self.store_changed()

    async def close(self) -> None:
        for hook in self.stop_hooks:
            hook()
        await self.jobs.cancel_all()
        await self.analysis.close()
        self.results.close()


def _log_failure(fut: Any) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        logger.debug("client request failed: %s", fut.exception())


def _register_lifecycle(server: KernelEvoServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: KernelEvoServer, params: types.InitializeParams) -> None:
        ls.analysis.worker.cwd = ls.root_path
        ls.update_settings(params.initialization_options or {}, trusted=True)
        if params.process_id:
            asyncio.get_running_loop().create_task(_exit_with_client(ls, int(params.process_id)))

    @server.feature(types.INITIALIZED)
    async def initialized(ls: KernelEvoServer, params: types.InitializedParams) -> None:
        if ls.supports("workspace.configuration"):
            try:
                got = await ls.workspace_configuration_async(
                    types.ConfigurationParams(
                        items=[types.ConfigurationItem(section=settings_mod.SECTION)]
                    )
                )
                if got and isinstance(got[0], dict):
                    ls.update_settings(got[0], trusted=False)
            except Exception as exc:
                logger.info("workspace/configuration failed: %s", exc)
        for hook in list(ls.initialized_hooks):
            try:
                await hook()
            except Exception:
                logger.exception("initialized hook failed")
        # Everything imported so far lives as long as the server: keep it out of the cyclic
        # collector, whose full passes otherwise stall a request for 100+ ms.
        gc.collect()
        gc.freeze()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: KernelEvoServer, params: types.DidChangeConfigurationParams
    ) -> None:
        values = params.settings
        if isinstance(values, dict) and values:
            ls.update_settings(values, trusted=False)
        elif ls.supports("workspace.configuration"):
            got = await ls.workspace_configuration_async(
                types.ConfigurationParams(
                    items=[types.ConfigurationItem(section=settings_mod.SECTION)]
                )
            )
            if got and isinstance(got[0], dict):
                ls.update_settings(got[0], trusted=False)
        ls.refresh_lenses()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: KernelEvoServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.analysis.opened(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: KernelEvoServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.analysis.changed(params.text_document.uri, params.content_changes)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: KernelEvoServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.analysis.closed(params.text_document.uri)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: KernelEvoServer, params: None) -> None:
        await ls.close()


async def _exit_with_client(ls: KernelEvoServer, pid: int, every_s: float = 1.0) -> None:
    """The client's process (initialize's processId) is gone: stop the jobs and exit, as the
    LSP asks, even though nobody closed our stdin (e.g. the editor was killed)."""
    while _alive(pid):
        await asyncio.sleep(every_s)
    logger.info("client process %d is gone; exiting", pid)
    try:
        await asyncio.wait_for(ls.close(), 10)
    finally:
        kill_all_groups()
        os._exit(0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(") ", 1)[1][0] not in "ZX"
    except (OSError, IndexError):
        return True


def create_server() -> KernelEvoServer:
    from kernelevo_server.features import (
        actions,
        debug,
        diagnostics,
        hover,
        inputs,
        jobs,
        lenses,
        precision,
        proposal,
        watch,
    )

    server = KernelEvoServer()
    _register_lifecycle(server)
    for feature in (
        lenses,
        hover,
        actions,
        inputs,
        precision,
        diagnostics,
        jobs,
        watch,
        proposal,
        debug,
    ):
        feature.register(server)
    atexit.register(kill_all_groups)
    return server


def uri_of(path: str | Path) -> str:
    return from_fs_path(str(path)) or str(path)
