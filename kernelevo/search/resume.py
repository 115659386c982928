"""What makes `--resume` safe: the task must be the one the run searched, and one process at a
time may work on a run (a second resume, or a resume of a run still going, is refused)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO, TYPE_CHECKING

from kernelevo.llm import Usage
from kernelevo.phase import Phase
from kernelevo.verdict import Verdict

if TYPE_CHECKING:
    from kernelevo.search.loop import Search


class ResumeError(Exception):
    """A run cannot be continued; the message says what to do instead."""


def check_task(run_id: str, stored_hash: str, task_hash: str, task_path: str) -> None:
    """Refuse to continue a run on a task whose content changed since the run began: its
    candidates were verified against the old reference."""
    if stored_hash and stored_hash != task_hash:
        raise ResumeError(
            f"{task_path} changed since run {run_id} began (its candidates were checked against the "
            f"old version); start a new run instead of --resume"
        )


class RunLock:
    """An exclusive lock on a run's folder, held while a process works on the run. The OS drops
    it when the process dies, so a killed run can be resumed at once."""

    def __init__(self, run_dir: Path, run_id: str) -> None:
        self.path = run_dir / "lock"
        self.run_id = run_id
        self._file: IO[str] | None = None

    def acquire(self) -> RunLock:
        f = open(self.path, "a+")  # noqa: SIM115 (the lock is held until release())
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            f.close()
            raise ResumeError(
                f"run {self.run_id} is being worked on by {holder}; wait for it to finish or stop it, "
                f"then resume"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"process {os.getpid()}")
        f.flush()
        self._file = f
        return self

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None


def restore(search: Search) -> None:
    """Rebuild the population, spending and position from what the store holds."""
    rows = search.store.candidates(search.run_id)
    phases = {row["id"]: Phase.of_row(row) for row in rows}
    done = {
        phases[r["id"]].index
        for r in rows
        if phases[r["id"]].is_model and r["features"].get("final")
    }
    for row in rows:
        phase = phases[row["id"]]
        if not phase.is_model or phase.index in done:
            search._remember(
                row["id"],
                row["source"],
                row["backend"],
                Verdict.from_dict(row["verdict"]),
                phase,
                row["parent_id"],
                row["origin"],
            )
        else:
            search.store.delete_candidate(row["id"])  # re-evaluated from its stored answer
    started: set[int] = set()
    for call in search.store.llm_calls(search.run_id):
        search.budget.charge(
            Usage(
                call["input_tokens"],
                call["output_tokens"],
                call["cache_read_tokens"],
                call["cache_write_tokens"],
                call["cost_usd"],
            )
        )
        if call["phase_index"] is not None:
            started.add(int(call["phase_index"]))
    search.next_iteration = max(done | started) + 1 if done | started else 0
    search.unfinished = sorted(set(range(search.next_iteration)) - done)
    search.completed = len(done)
    run = search.store.get_run(search.run_id)
    summary = run.summary if run is not None else {}
    search.seeds_done = bool(summary.get("seeds_done"))
    search.earlier_elapsed_s = float(summary.get("elapsed_s") or 0.0)
    search.budget.wall_s = (
        None
        if search.cfg.wall_s is None
        else max(search.cfg.wall_s - search.earlier_elapsed_s, 0.0)
    )
