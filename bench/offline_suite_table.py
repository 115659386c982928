"""The offline suite's table and totals, from its rows (bench/offline_suite.py writes them).

Kept apart so a rows file from any call (or several, resumed) renders the same way:
`python bench/offline_suite.py --report ROWS.jsonl`.
"""

from __future__ import annotations

import math
from typing import Any


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def shipped_ms(row: dict[str, Any], fallback: str) -> float:
    """What the user runs: the proposed kernel, else their own code (eager) or the better baseline."""
    if row["proposed"]:
        return row["best_ms"]
    if fallback == "eager":
        return row["eager_ms"]
    return min(row["eager_ms"], row.get("compile_ms") or row["eager_ms"])


def is_oom(text: str) -> bool:
    low = text.lower()
    return "outofmemory" in low or "out of memory" in low


def _f(x: Any, d: int = 3) -> str:
    return f"{x:.{d}g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else "-"


def proposed_word(row: dict[str, Any]) -> str:
    if not row.get("proposed"):
        return "no"
    vs = row.get("versus_compile") or ""
    return f"yes ({vs} torch.compile)" if vs else "yes"


def markdown_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| task | eager ms | torch.compile ms | best offline ms | origin | proposed | reason | wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(
                f"| {r['task']} | - | - | - | - | no | error: {r['error'][:160]} | "
                f"{_f(r.get('elapsed_s'), 3)} |"
            )
            continue
        reason = (r.get("reason") or "").replace("|", "/")[:220]
        lines.append(
            f"| {r['task']} | {_f(r.get('eager_ms'), 4)} | {_f(r.get('compile_ms'), 4)} | "
            f"{_f(r.get('best_ms'), 4)} | {r.get('origin') or '-'} | {proposed_word(r)} | "
            f"{reason} | {_f(r.get('elapsed_s'), 3)} |"
        )
    return lines


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures the goal is stated in; every list names its tasks."""
    done = [r for r in rows if "error" not in r]
    timed = [r for r in done if r.get("eager_ms")]
    comp = [r for r in timed if r.get("compile_ms")]
    slower_noise = [
        r["task"]
        for r in timed
        if r["proposed"]
        and any(
            (r.get("ci") or {}).get("candidate", [0, 0])[0]
            > (r.get("ci") or {}).get(b, [0, 1e18])[1]
            for b in ("eager", "compile")
        )
    ]
    slower_median = [
        f"{r['task']} ({min(r['eager_ms'], r.get('compile_ms') or 1e9) / r['best_ms']:.3f}x)"
        for r in timed
        if r["proposed"] and r["best_ms"] > min(r["eager_ms"], r.get("compile_ms") or 1e9)
    ]
    return {
        "tasks": len(rows),
        "finished": len(done),
        "timed": len(timed),
        "proposals": sum(bool(r.get("proposed")) for r in done),
        "beats_compile": sum(r.get("versus_compile") == "beats" for r in done if r.get("proposed")),
        "matches_compile": sum(
            r.get("versus_compile") == "matches" for r in done if r.get("proposed")
        ),
        "geomean_compile": geomean([r["eager_ms"] / r["compile_ms"] for r in comp]),
        "geomean_ships_timed": geomean([r["eager_ms"] / shipped_ms(r, "eager") for r in timed]),
        # a task without a verified kernel ships the user's own code: exactly 1.0x over eager
        "geomean_ships_all": geomean(
            [r["eager_ms"] / shipped_ms(r, "eager") if r.get("eager_ms") else 1.0 for r in done]
        ),
        "geomean_better": geomean([r["eager_ms"] / shipped_ms(r, "better") for r in timed]),
        "slower_than_better_baseline_by_median": slower_median,
        "slower_than_better_baseline_beyond_noise": slower_noise,
        "oom_tasks": [r["task"] for r in done if r.get("oom")],
        "without_candidates_or_reason": [
            r["task"]
            for r in done
            if not r.get("evaluations") and not (r.get("reason") or r.get("notes"))
        ],
        "errors": [r["task"] for r in rows if "error" in r],
        "cut_by_deadline": [r["task"] for r in done if r.get("cut_by_deadline")],
        "wall_s_total": round(sum(r.get("elapsed_s") or 0 for r in rows), 1),
        "wall_s_max": max((r.get("elapsed_s") or 0 for r in rows), default=0),
        "wall_s_median": sorted(r.get("elapsed_s") or 0 for r in rows)[len(rows) // 2]
        if rows
        else 0,
    }


def may_start(left_s: float, walls: list[float]) -> bool:
    """A task starts while the time left is at least the median finished task's wall time (5 s at
    least); a search started then ends by the deadline and its row says so. Waiting for the slowest
    task's time instead left the GPU idle for the last 100-130 s of a call (H200, 2026-12-03)."""
    need = sorted(walls)[len(walls) // 2] if walls else 0.0
    return left_s >= max(need, 5.0)


def summary_lines(rows: list[dict[str, Any]], device: str) -> list[str]:
    t = totals(rows)
    g = lambda x: f"{x:.2f}x" if x else "-"  # noqa: E731
    return [
        f"offline suite on {device}: {t['tasks']} tasks, {t['finished']} finished, {t['timed']} with "
        f"timed baselines",
        f"geomean over eager: torch.compile {g(t['geomean_compile'])} ({t['timed']} timed tasks) · "
        f"what KernelEvo ships (kernel where proposed, else the user's code) "
        f"{g(t['geomean_ships_timed'])} over the timed tasks, {g(t['geomean_ships_all'])} over all "
        f"{t['finished']} finished (no kernel: 1.00x) · kernel where proposed else the better "
        f"baseline {g(t['geomean_better'])}",
        f"proposals: {t['proposals']} ({t['beats_compile']} beat torch.compile, "
        f"{t['matches_compile']} match it); slower than the better baseline beyond the noise (95 % "
        f"intervals): {t['slower_than_better_baseline_beyond_noise'] or 'none'}; by the medians "
        f"alone: {t['slower_than_better_baseline_by_median'] or 'none'}",
        f"out of memory: {len(t['oom_tasks'])} tasks {t['oom_tasks'] or ''}; without candidates and "
        f"without a reason: {t['without_candidates_or_reason'] or 'none'}; errors: "
        f"{t['errors'] or 'none'}; searches cut by the deadline: {t['cut_by_deadline'] or 'none'}",
        f"wall time per task: median {t['wall_s_median']} s, slowest {t['wall_s_max']} s, "
        f"{t['wall_s_total']} s summed over tasks (searches ran side by side)",
    ]
