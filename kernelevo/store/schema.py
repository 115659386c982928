"""The store's SQLite schema and the upgrade of older stores to it.

Tables are created if missing; a version-1 store (phases encoded in numbers) gets its phase
columns added and filled, so an upgrade loses no recorded candidate or model call.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelevo.store.connection import RedactingConnection

SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS verdicts (
    task_hash TEXT, candidate_hash TEXT, env_key TEXT,
    status TEXT, verdict_json TEXT, created_at REAL,
    PRIMARY KEY (task_hash, candidate_hash, env_key));
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, created_at REAL, updated_at REAL,
    task_path TEXT, task_hash TEXT, source_file TEXT, target_id TEXT, source_hash TEXT,
    status TEXT, config_json TEXT, summary_json TEXT);
CREATE TABLE IF NOT EXISTS candidates (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, iteration INTEGER, parent_id INTEGER,
    origin TEXT, backend TEXT, source TEXT, candidate_hash TEXT, status TEXT,
    time_ms REAL, speedup_eager REAL, speedup_compile REAL, verdict_json TEXT,
    features_json TEXT, created_at REAL, phase TEXT, phase_index INTEGER, attempt INTEGER);
CREATE INDEX IF NOT EXISTS candidates_run ON candidates(run_id);
CREATE TABLE IF NOT EXISTS llm_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, request_hash TEXT, seq INTEGER,
    provider TEXT, model TEXT, prompt_json TEXT, response_text TEXT,
    input_tokens INTEGER, output_tokens INTEGER, cache_read_tokens INTEGER,
    cache_write_tokens INTEGER, cost_usd REAL, created_at REAL, phase TEXT, phase_index INTEGER,
    attempt INTEGER);
CREATE INDEX IF NOT EXISTS llm_calls_run ON llm_calls(run_id, request_hash);
CREATE TABLE IF NOT EXISTS results (
    run_id TEXT PRIMARY KEY, source_file TEXT, target_id TEXT, summary_json TEXT, created_at REAL);
CREATE INDEX IF NOT EXISTS results_file ON results(source_file);
"""


def migrate(db: RedactingConnection) -> None:
    """Version 1 stores encoded a candidate's phase in `iteration` (seeds -1-k, tuning -1000-k)
    and a model call's in `seq` (iteration*100 + attempt): add the phase columns and fill them."""
    for table in ("candidates", "llm_calls"):
        have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
        for column, kind in (
            ("phase", "TEXT"),
            ("phase_index", "INTEGER"),
            ("attempt", "INTEGER"),
        ):
            if column not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    old = db.execute(
        "SELECT id, iteration, features_json FROM candidates WHERE phase IS NULL"
    ).fetchall()
    calls = db.execute(
        "SELECT id, seq FROM llm_calls WHERE phase IS NULL AND seq IS NOT NULL"
    ).fetchall()
    if not old and not calls:
        return
    from kernelevo.phase import Phase

    with db:
        for cid, iteration, features in old:
            attempt = int(json.loads(features or "{}").get("attempt") or 0)
            ph = Phase.from_legacy(int(iteration or 0), attempt)
            db.execute(
                "UPDATE candidates SET phase=?, phase_index=?, attempt=?, iteration=? WHERE id=?",
                (ph.kind, ph.index, ph.attempt, ph.index if ph.is_model else None, cid),
            )
        for cid, seq in calls:
            ph = Phase.from_legacy_seq(int(seq))
            db.execute(
                "UPDATE llm_calls SET phase=?, phase_index=?, attempt=? WHERE id=?",
                (ph.kind, ph.index, ph.attempt, cid),
            )
