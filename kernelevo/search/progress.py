"""The progress event a search emits after each evaluation (the record is
kernelevo/search/events.py's ProgressEvent), and the run summary the store keeps for a search
(`run_summary`, `resume_state`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelevo.phase import Phase
from kernelevo.search.events import ProgressEvent

if TYPE_CHECKING:
    from kernelevo.search.loop import Search


def describe_step(
    phase: Phase,
    total: int | None,
    origin: str,
    status: str,
    speedup: float | None,
    repair_total: int | None = None,
) -> tuple[int, str]:
    """(1-based index, human message), e.g. 'seed 3 of 7 (template:row_softmax): verified, 1.80x'."""
    index = (phase.attempt if phase.kind == "tune" else phase.index) + 1
    of = f" of {total}" if total else ""
    if phase.kind == "seed":
        where = f"seed {index}{of}"
    elif phase.kind == "tune":
        where = f"tuning candidate {phase.index + 1}, configuration {index}{of}"
    elif phase.kind == "repair":
        where = f"iteration {index}{of}, repair {phase.attempt}" + (
            f" of {repair_total}" if repair_total else ""
        )
    else:
        where = f"iteration {index}{of}"
    outcome = status.replace("_", " ") + (f", {speedup:.2f}x" if speedup else "")
    return index, f"{where} ({origin}): {outcome}"


def progress_event(
    search: Search,
    phase: Phase,
    origin: str,
    status: str,
    speedup: float | None,
    candidate_id: int | None,
    detail: str = "",
) -> ProgressEvent:
    """The event for one step of `search`, with the run's best and spending so far."""
    best = search.population.best()
    snap = search.budget.snapshot()
    t = (best.verdict.timings or {}) if best else {}
    total = {"seed": len(search.seeds), "tune": search.cfg.tune_evals}.get(
        phase.kind, search.cfg.iterations
    )
    index, message = describe_step(phase, total, origin, status, speedup, search.cfg.repair_tries)
    message += f" ({detail[:200]})" if detail else ""
    return ProgressEvent(
        run_id=search.run_id,
        phase=phase.kind,
        index=index,
        total=total,
        origin=origin,
        status=status,
        speedup=speedup,
        message=message,
        attempt=phase.attempt,
        candidate_id=candidate_id,
        iteration=search.completed,
        evaluated=len(search.population.programs),
        best_speedup=best.speedup if best else None,
        best_speedup_compile=t.get("speedup_compile"),
        verified=best is not None,
        tokens=snap["tokens"],
        cost_usd=snap["cost_usd"],
    )


def resume_state(search: Search) -> dict[str, Any]:
    """What a resume needs besides the candidates and calls: whether the seeds are done, and
    the wall time spent so far (the time budget does not restart)."""
    return {
        "seeds_done": search.seeds_done,
        "elapsed_s": round(search.earlier_elapsed_s + search.budget.elapsed_s, 3),
    }


def run_summary(search: Search, status: str) -> dict[str, Any]:
    """The run's summary as the store keeps it: best, spending, counts, why it stopped."""
    from kernelevo.search.apply_guard import apply_guard

    best = search.population.best()
    t = (best.verdict.timings or {}) if best else {}
    return {
        **apply_guard(best, search.cfg, search.run_id, search.task),
        "status": status,
        "phase_s": dict(search.phase_s),
        "best_candidate": best.id if best else None,
        "backend": best.backend if best else "",
        "speedup_eager": t.get("speedup_eager"),
        "speedup_compile": t.get("speedup_compile"),
        "usage": search.budget.snapshot(),
        "counts": search.population.counts(),
        "stop_reason": search.stop_reason,
        "iterations": search.completed,
        "calls_reused": search.calls_reused,
        "notes": search.notes,
        "model_errors": search.model_errors,
        "throughput": search.throughput.snapshot(),
        **resume_state(search),
    }
