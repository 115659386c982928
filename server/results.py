"""Store results per file, cached until the store changes.

Only `kernelevo.store` touches SQLite; queries run in a thread (SQLite releases the GIL)
behind one lock, since the server holds a single connection. The store file is opened
only once it exists: opening a folder in the editor must not create `.kernelevo/`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from pathlib import Path

from kernelevo.store import ResultSummary, RunRecord, Store

logger = logging.getLogger(__name__)


class ResultsCache:
    def __init__(self, store_path: Path) -> None:
        self.store_path = Path(store_path)
        self._store: Store | None = None
        self._lock = threading.Lock()
        self._by_file: dict[str, dict[str, ResultSummary]] = {}
        self._runs: dict[str, RunRecord | None] = {}
        self.generation = 0

    def set_store_path(self, path: Path) -> None:
        if Path(path) != self.store_path:
            self.close()
            self.store_path = Path(path)
            self.invalidate()

    def invalidate(self) -> None:
        self._by_file.clear()
        self._runs.clear()
        self.generation += 1

    def cached(self, path: str) -> dict[str, ResultSummary] | None:
        return self._by_file.get(_key(path))

    async def for_file(self, path: str) -> dict[str, ResultSummary]:
        """Latest result per target id of `path`."""
        key = _key(path)
        hit = self._by_file.get(key)
        if hit is not None:
            return hit
        generation = self.generation
        found = await asyncio.to_thread(self._query, key)
        if generation == self.generation:
            self._by_file[key] = found
        return found

    async def result_for_run(self, run_id: str) -> ResultSummary | None:
        return await asyncio.to_thread(self._result_for_run, run_id)

    async def run(self, run_id: str) -> RunRecord | None:
        if run_id in self._runs:
            return self._runs[run_id]
        generation = self.generation
        found = await asyncio.to_thread(self._get_run, run_id)
        if generation == self.generation:
            self._runs[run_id] = found
        return found

    def _open(self) -> Store | None:
        if self._store is None:
            if not self.store_path.exists():
                return None
            self._store = Store(self.store_path)
        return self._store

    def _query(self, key: str) -> dict[str, ResultSummary]:
        with self._lock:
            try:
                store = self._open()
                if store is None:
                    return {}
                return {r.target_id: r for r in store.results_for_file(key)}
            except Exception:
                logger.exception("reading results from %s failed", self.store_path)
                return {}

    def _get_run(self, run_id: str) -> RunRecord | None:
        with self._lock:
            try:
                store = self._open()
                return store.get_run(run_id) if store else None
            except Exception:
                logger.exception("reading run %s from %s failed", run_id, self.store_path)
                return None

    def _result_for_run(self, run_id: str) -> ResultSummary | None:
        with self._lock:
            try:
                store = self._open()
                if store is None:
                    return None
                return next((r for r in store.iter_results() if r.run_id == run_id), None)
            except Exception:
                logger.exception("reading results from %s failed", self.store_path)
                return None

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None


def _key(path: str) -> str:
    return os.path.realpath(path)
