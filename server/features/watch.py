"""Results written outside the editor (a CLI run) show up too: watch the store file.

Through `workspace/didChangeWatchedFiles` when the client can register watchers
dynamically, else with watchdog. SQLite in WAL mode writes `store.sqlite-wal` first, so
the watch covers `store.sqlite*`. The folder may not exist yet: watchdog then watches
its parent until it appears.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from pathlib import Path
from typing import Any

from kernelevo_server.app import KernelEvoServer
from lsprotocol import types

logger = logging.getLogger(__name__)


class FolderWatcher:
    """watchdog on the store's folder (or its parent until the folder exists)."""

    def __init__(self, store_path: Path, on_change: Any, loop: asyncio.AbstractEventLoop) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        self.store_path = store_path
        self._loop = loop
        self._on_change = on_change
        self._observer = Observer()
        self._observer.daemon = True
        self._watched: set[str] = set()
        outer = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                outer._event(
                    os.fsdecode(event.src_path), os.fsdecode(getattr(event, "dest_path", "") or "")
                )

        self._handler = Handler()
        self._arm()
        self._observer.start()

    def _arm(self) -> None:
        folder = self.store_path.parent
        target = folder if folder.is_dir() else folder.parent
        if target.is_dir() and str(target) not in self._watched:
            self._observer.schedule(self._handler, str(target), recursive=False)
            self._watched.add(str(target))

    def _event(self, *paths: str) -> None:
        folder, name = str(self.store_path.parent), self.store_path.name
        for p in paths:
            if not p:
                continue
            if p == folder and str(folder) not in self._watched:
                self._loop.call_soon_threadsafe(self._arm)
                self._loop.call_soon_threadsafe(
                    self._on_change
                )  # the store may be written before the watch starts
            if os.path.basename(p).startswith(name) and os.path.dirname(p) == folder:
                self._loop.call_soon_threadsafe(self._on_change)
                return

    def stop(self) -> None:
        self._observer.stop()


def register(server: KernelEvoServer) -> None:
    state: dict[str, Any] = {
        "watcher": None,
        "registration": None,
        "path": None,
        "started": False,
        "pending": set(),
    }

    def matches(uri: str) -> bool:
        path = server.path_of(uri)
        store = server.results.store_path
        return os.path.dirname(os.path.abspath(path)) == str(
            store.parent.absolute()
        ) and os.path.basename(path).startswith(store.name)

    async def register_client_watcher(store: Path) -> bool:
        if not server.supports("workspace.did_change_watched_files.dynamic_registration"):
            return False
        if server.supports("workspace.did_change_watched_files.relative_pattern_support"):
            pattern: Any = types.RelativePattern(
                base_uri=store.parent.absolute().as_uri(), pattern=f"{store.name}*"
            )
        else:
            pattern = f"**/{store.parent.name}/{store.name}*"
        reg_id = f"kernelevo-store-{uuid.uuid4().hex[:8]}"
        try:
            await server.client_register_capability_async(
                types.RegistrationParams(
                    registrations=[
                        types.Registration(
                            id=reg_id,
                            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                watchers=[types.FileSystemWatcher(glob_pattern=pattern)]
                            ),
                        )
                    ]
                )
            )
        except Exception as exc:
            logger.info("client watcher registration failed (%s); using watchdog", exc)
            return False
        state["registration"] = reg_id
        return True

    async def unregister_client_watcher() -> None:
        reg_id, state["registration"] = state["registration"], None
        if reg_id:
            try:
                await server.client_unregister_capability_async(
                    types.UnregistrationParams(
                        unregisterations=[
                            types.Unregistration(
                                id=reg_id, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES
                            )
                        ]
                    )
                )
            except Exception as exc:
                logger.info("unregistering the store watcher failed: %s", exc)

    async def watch() -> None:
        store = server.results.store_path
        if state["path"] == store:
            return
        state["path"] = store
        if state["watcher"] is not None:
            state["watcher"].stop()
            state["watcher"] = None
        await unregister_client_watcher()
        if not await register_client_watcher(store):
            try:
                state["watcher"] = FolderWatcher(
                    store, server.store_changed, asyncio.get_running_loop()
                )
            except Exception:
                logger.exception(
                    "cannot watch %s; results from other processes appear after a reload", store
                )

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(
        ls: KernelEvoServer, params: types.DidChangeWatchedFilesParams
    ) -> None:
        store_hit = False
        for change in params.changes:
            if matches(change.uri):
                store_hit = True
            else:
                ls.analysis.invalidate_disk(ls.path_of(change.uri))
        if store_hit:
            ls.store_changed()

    def settings_changed() -> None:
        if state["started"]:  # before `initialized` the client cannot take requests
            task = asyncio.ensure_future(watch())
            state["pending"].add(task)  # the loop keeps only a weak reference to a task
            task.add_done_callback(state["pending"].discard)

    async def start() -> None:
        state["started"] = True
        await watch()

    def stop() -> None:
        if state["watcher"] is not None:
            state["watcher"].stop()
            state["watcher"] = None

    server.settings_listeners.append(settings_changed)
    server.initialized_hooks.append(start)
    server.stop_hooks.append(stop)
