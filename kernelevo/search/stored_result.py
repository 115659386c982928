"""A finished search as the store keeps it: the best candidate written beside the run, and the
result summary (times, speedups, roofline, cost, outcome, kept library ops, a precision offer)
that `kernelevo runs`, `kernelevo apply` and the editor read back.
"""

from __future__ import annotations

import time
from typing import Any

from kernelevo.search.config import SearchConfig, SearchResult
from kernelevo.store import ResultSummary, Store
from kernelevo.task import TaskFile


def store_result(store: Store, task: TaskFile, config: SearchConfig, result: SearchResult) -> None:
    """Write the run's best candidate to runs/RUN/best.py and its result summary to the store."""
    best = result.best
    t = (best.verdict.timings or {}) if best else {}
    r = (best.verdict.roofline or {}) if best else {}
    candidate_path = ""
    if best is not None:
        out = store.path.parent / "runs" / result.run_id / "best.py"
        out.write_text(best.source)
        candidate_path = str(out)
    store.put_result(
        ResultSummary(
            run_id=result.run_id,
            source_file=config.source_file or str(task.path),
            target_id=config.target_id or "Model",
            status=result.status,
            backend=best.backend if best else "",
            gpu=(best.verdict.device or {}).get("name", "") if best else "",
            created_at=time.time(),
            reference_ms=t.get("eager_ms"),
            compile_ms=t.get("compile_ms"),
            best_ms=t.get("candidate_ms"),
            speedup_eager=t.get("speedup_eager"),
            speedup_compile=t.get("speedup_compile"),
            achieved_gbps=r.get("achieved_gbps"),
            achieved_tflops=r.get("achieved_tflops"),
            roofline_fraction=r.get("bw_fraction") or r.get("flop_fraction"),
            tokens=int(result.usage.get("tokens", 0)),
            cost_usd=float(result.usage.get("cost_usd", 0.0)),
            verified=best is not None,
            candidate_path=candidate_path,
            outcome=result.outcome.to_dict() if result.outcome else {},
            kept_library_ops=list(best.verdict.kept_library_ops) if best else [],
            library_split=best.verdict.library_split if best else "",
            precision_offer=_precision_offer(store, result.run_id),
        )
    )


def _precision_offer(store: Store, run_id: str) -> dict[str, Any]:
    """The run's best candidate that only a lower precision level would accept (the user may
    accept that level: `# kernelevo: precision = tf32` above the target, ALLOW_TF32 on a task)."""
    offers = []
    for c in store.candidates(run_id):
        for check in (c.get("verdict") or {}).get("checks") or []:
            detail = check.get("detail") or {}
            if check.get("name") == "precision" and not check.get("passed") and detail.get("level"):
                offers.append(
                    {
                        "level": detail["level"],
                        "rel_l2": detail.get("rel_l2"),
                        "message": check.get("message", ""),
                    }
                )
    return min(offers, key=lambda o: o["rel_l2"] if o["rel_l2"] is not None else 1.0, default={})
