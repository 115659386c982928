"""The embedded results store: one SQLite file shared by the CLI, the search and the editor.

WAL mode lets the language server read while a search writes. Every write commits
at once, so a killed run loses nothing that was paid for. No torch import here:
the language server reads results through this module.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kernelevo.store.records import ResultSummary, RunRecord, run_record, stored_json
from kernelevo.store.schema import SCHEMA, SCHEMA_VERSION, migrate

if TYPE_CHECKING:
    from kernelevo.phase import Phase
    from kernelevo.store.connection import RedactingConnection

__all__ = ["SCHEMA_VERSION", "ResultSummary", "RunRecord", "Store", "default_store_path"]

DEFAULT_DIRNAME = ".kernelevo"


def default_store_path(workdir: str | os.PathLike[str] | None = None) -> Path:
    """`$KERNELEVO_STORE` if set, else `.kernelevo/store.sqlite` in the working folder."""
    env = os.environ.get("KERNELEVO_STORE")
    if env:
        return Path(env)
    return Path(workdir or os.getcwd()) / DEFAULT_DIRNAME / "store.sqlite"


class Store:
    """A handle on the SQLite file; cheap to open, safe to use from several processes."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        from kernelevo.store.connection import open_database

        self.path = Path(path) if path is not None else default_store_path()
        self._db, self.read_only = open_database(self.path, self._prepare)

    def _prepare(self, db: RedactingConnection) -> None:
        self._db = db
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        try:
            db.executescript(SCHEMA)
        except sqlite3.Error as exc:
            from kernelevo.store.connection import translate

            raise translate(exc, self.path) from None
        migrate(db)
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None or row[0] != str(
            SCHEMA_VERSION
        ):  # no write on an up-to-date store (a full disk still reads)
            db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- verdict cache -------------------------------------------------------------
    def get_verdict(
        self, task_hash: str, candidate_hash: str, env_key: str
    ) -> dict[str, Any] | None:
        row = self._db.execute(
            "SELECT verdict_json FROM verdicts WHERE task_hash=? AND candidate_hash=? AND env_key=?",
            (task_hash, candidate_hash, env_key),
        ).fetchone()
        if row is None:
            return None
        verdict = stored_json(row[0], "a cached verdict")
        return verdict or None  # a damaged entry is a cache miss: the candidate is judged again

    def put_verdict(
        self, task_hash: str, candidate_hash: str, env_key: str, verdict: dict[str, Any]
    ) -> None:
        if self.read_only:  # a cache: a read-only store just does not remember
            return
        self._db.execute(
            "INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?,?)",
            (
                task_hash,
                candidate_hash,
                env_key,
                verdict.get("status", ""),
                json.dumps(verdict),
                time.time(),
            ),
        )

    # -- runs ------------------------------------------------------------------------
    def create_run(
        self,
        *,
        task_path: str,
        task_hash: str,
        config: dict[str, Any],
        source_file: str = "",
        target_id: str = "",
        source_hash: str = "",
        run_id: str | None = None,
    ) -> str:
        """A new run; its id is the given one, or the time and 6 random hex digits, drawn again
        when another run started in the same second drew the same (600 runs a second collide
        about once in a hundred)."""
        for attempt in range(8):
            rid = run_id or time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
            now = time.time()
            row = (rid, now, now, task_path, task_hash, source_file, target_id, source_hash)
            try:
                self._db.execute(
                    "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (*row, "running", json.dumps(config), "{}"),
                )
            except sqlite3.IntegrityError:
                if run_id is not None or attempt == 7:
                    raise
                continue
            return rid
        raise AssertionError("unreachable")

    def update_run(
        self, run_id: str, *, status: str | None = None, summary: dict[str, Any] | None = None
    ) -> None:
        sets: list[str] = ["updated_at=?"]
        args: list[Any] = [time.time()]
        if status is not None:
            sets.append("status=?")
            args.append(status)
        if summary is not None:
            sets.append("summary_json=?")
            args.append(json.dumps(summary))
        self._db.execute(f"UPDATE runs SET {', '.join(sets)} WHERE id=?", (*args, run_id))

    def get_run(self, run_id: str) -> RunRecord | None:
        """The run with this id, or the newest whose id starts with it (`_` and `%` are
        characters of the prefix, not SQL wildcards)."""
        if not run_id:
            return None
        row = self._db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            prefix = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            row = self._db.execute(
                "SELECT * FROM runs WHERE id LIKE ? ESCAPE '\\' ORDER BY created_at DESC",
                (prefix + "%",),
            ).fetchone()
        return run_record(row) if row else None

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        rows = self._db.execute(
            "SELECT * FROM runs ORDER BY created_at DESC LIMIT ?", (limit,)
        ).fetchall()
        return [run_record(r) for r in rows]

    # -- candidates ------------------------------------------------------------------
    def add_candidate(
        self,
        run_id: str,
        *,
        phase: Phase,
        origin: str,
        backend: str,
        source: str,
        candidate_hash: str,
        verdict: dict[str, Any],
        parent_id: int | None = None,
        time_ms: float | None = None,
        speedup_eager: float | None = None,
        speedup_compile: float | None = None,
        features: dict[str, Any] | None = None,
    ) -> int:
        cur = self._db.execute(
            "INSERT INTO candidates (run_id, iteration, parent_id, origin, backend, source, candidate_hash, status,"
            " time_ms, speedup_eager, speedup_compile, verdict_json, features_json, created_at, phase, phase_index,"
            " attempt) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                phase.index if phase.is_model else None,
                parent_id,
                origin,
                backend,
                source,
                candidate_hash,
                verdict.get("status", ""),
                time_ms,
                speedup_eager,
                speedup_compile,
                json.dumps(verdict),
                json.dumps(features or {}),
                time.time(),
                phase.kind,
                phase.index,
                phase.attempt,
            ),
        )
        return cast(int, cur.lastrowid)  # an INSERT sets it

    def candidates(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT * FROM candidates WHERE run_id=? ORDER BY id", (run_id,)
        ).fetchall()
        out = []
        for r in rows:
            d = dict(r)
            d["verdict"] = stored_json(d.pop("verdict_json"), f"candidate {d['id']}'s verdict")
            d["features"] = stored_json(d.pop("features_json"), f"candidate {d['id']}'s features")
            out.append(d)
        return out

    def delete_candidate(self, candidate_id: int) -> None:
        self._db.execute("DELETE FROM candidates WHERE id=?", (candidate_id,))

    def set_candidate_features(self, candidate_id: int, features: dict[str, Any]) -> None:
        row = self._db.execute(
            "SELECT features_json FROM candidates WHERE id=?", (candidate_id,)
        ).fetchone()
        merged = {**stored_json(row[0], "a candidate's features"), **features} if row else features
        self._db.execute(
            "UPDATE candidates SET features_json=? WHERE id=?", (json.dumps(merged), candidate_id)
        )

    def get_candidate(self, candidate_id: int) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM candidates WHERE id=?", (candidate_id,)).fetchone()
        if row is None:
            return None
        d = dict(row)
        d["verdict"] = stored_json(d.pop("verdict_json"), f"candidate {candidate_id}'s verdict")
        d["features"] = stored_json(d.pop("features_json"), f"candidate {candidate_id}'s features")
        return d

    # -- LLM calls -------------------------------------------------------------------
    def add_llm_call(
        self,
        run_id: str,
        *,
        request_hash: str,
        phase: Phase,
        provider: str,
        model: str,
        prompt: Any,
        response_text: str,
        usage: dict[str, Any],
    ) -> None:
        self._db.execute(
            "INSERT INTO llm_calls (run_id, request_hash, phase, phase_index, attempt, provider, model, prompt_json,"
            " response_text, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, created_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                request_hash,
                phase.kind,
                phase.index,
                phase.attempt,
                provider,
                model,
                json.dumps(prompt),
                response_text,
                int(usage.get("input_tokens", 0)),
                int(usage.get("output_tokens", 0)),
                int(usage.get("cache_read_tokens", 0)),
                int(usage.get("cache_write_tokens", 0)),
                float(usage.get("cost_usd", 0.0)),
                time.time(),
            ),
        )

    def llm_calls(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT * FROM llm_calls WHERE run_id=? ORDER BY id", (run_id,)
        ).fetchall()
        return [dict(r) for r in rows]

    def find_llm_call(self, run_id: str, phase: Phase) -> dict[str, Any] | None:
        """The paid answer stored for this model iteration and attempt, if any."""
        row = self._db.execute(
            "SELECT * FROM llm_calls WHERE run_id=? AND phase_index=? AND attempt=? AND"
            " phase IN ('iteration', 'repair') ORDER BY id DESC",
            (run_id, phase.index, phase.attempt),
        ).fetchone()
        return dict(row) if row else None

    # -- results (what the editor reads) ----------------------------------------------
    def put_result(self, summary: ResultSummary) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO results VALUES (?,?,?,?,?)",
            (
                summary.run_id,
                _norm(summary.source_file),
                summary.target_id,
                json.dumps(asdict(summary)),
                summary.created_at or time.time(),
            ),
        )

    def results_for_file(self, path: str) -> list[ResultSummary]:
        """Latest result per target of a file (newest run wins)."""
        rows = self._db.execute(
            "SELECT summary_json FROM results WHERE source_file=? ORDER BY created_at",
            (_norm(path),),
        ).fetchall()
        latest: dict[str, ResultSummary] = {}
        for (js,) in rows:
            data = stored_json(js, "a stored result")
            if data:
                s = ResultSummary.from_dict(data)
                latest[s.target_id] = s
        return list(latest.values())

    def iter_results(self) -> Iterator[ResultSummary]:
        for (js,) in self._db.execute("SELECT summary_json FROM results ORDER BY created_at"):
            data = stored_json(js, "a stored result")
            if data:
                yield ResultSummary.from_dict(data)


def _norm(path: str) -> str:
    return os.path.realpath(path) if path else ""
