"""What `kernelevo optimize` prints: progress while it searches, then each target's result.

Progress is one updating terminal line, or JSON lines for the language server; the result
says the speedups, why nothing verified when nothing did, and the next command to run.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kernelevo.cli.table import render
from kernelevo.outcome import OutcomeKind, RunOutcome
from kernelevo.search.events import Done, ProgressEvent, SearchEvent, Status


class Printer:
    """Progress on the terminal (one updating line) or as JSON lines for the language server."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.tty = sys.stderr.isatty()

    def __call__(self, event: SearchEvent) -> None:
        if self.mode == "json":
            sys.stdout.write(event.line() + "\n")
            sys.stdout.flush()
        elif self.mode == "text" and isinstance(event, Status):
            prefix = "\r\033[K" if self.tty else ""
            sys.stderr.write(f"{prefix}kernelevo: {event.message}\n")
            sys.stderr.flush()
        elif self.mode == "text" and isinstance(event, ProgressEvent):
            line = event.text()
            sys.stderr.write(("\r\033[K" if self.tty else "") + line + ("" if self.tty else "\n"))
            sys.stderr.flush()

    def done(self) -> None:
        if self.mode == "text" and self.tty:
            sys.stderr.write("\n")


def _done(printer: Printer, s: dict[str, Any], task: str | None = None) -> None:
    printer(
        Done(
            s["run_id"],
            s["status"],
            s["outcome"],
            best_speedup=s["best_speedup_eager"],
            best_speedup_compile=s["best_speedup_compile"],
            tokens=s["tokens"],
            cost_usd=s["cost_usd"],
            task=task,
        )
    )


def _summary(
    task_path: Path,
    result: Any,
    device: str,
    elapsed: float,
    origin: dict[str, str] | None = None,
    store: Any = None,
) -> dict[str, Any]:
    from kernelevo.targets.compile_advice import compile_advice

    best = result.best
    t = (best.verdict.timings or {}) if best else {}
    where = (best.verdict.device or {}) if best else {}
    advice = compile_advice(t, result.status, best.verdict.phases if best else None) if t else None
    outcome: RunOutcome = result.outcome or RunOutcome(OutcomeKind(result.status), device=device)
    return {
        "task": str(task_path),
        "run_id": result.run_id,
        "status": outcome.kind.value,
        "outcome": outcome.to_dict(),
        "headline": outcome.headline(),
        "device": device,
        "best_candidate": best.id if best else None,
        "best_backend": best.backend if best else None,
        "best_speedup_eager": t.get("speedup_eager"),
        "best_speedup_compile": t.get("speedup_compile"),
        "tokens": result.usage.get("tokens", 0),
        "cost_usd": result.usage.get("cost_usd", 0.0),
        "candidates": result.counts,
        "iterations": result.iterations,
        "stop_reason": result.stop_reason,
        "speed_measured": bool(t),
        "elapsed_s": round(elapsed, 1),
        "gpu": where.get("gpu_name"),
        "not_proposed": "; ".join(outcome.reasons)
        if outcome.kind is OutcomeKind.NO_IMPROVEMENT
        else "",
        "compile_advice": advice.sentence() if advice else "",
        "why_none": _why_none(result, store) if best is None else [],
        "worker": where.get("worker"),
        **(
            {"target_id": origin["target_id"], "source_file": origin["source_file"]}
            if origin and origin.get("target_id")
            else {}
        ),
    }


def _why_none(result: Any, store: Any) -> list[str]:
    """Why no candidate was verified: what each source of candidates produced, and what would help."""
    why: list[str] = []
    run = store.get_run(result.run_id) if store is not None else None
    why += (
        [n for n in ((run.summary or {}).get("notes") or []) if n.startswith("offline")]
        if run
        else []
    )
    by_origin: dict[str, list[dict[str, Any]]] = {}
    for c in store.candidates(result.run_id) if store is not None else []:
        by_origin.setdefault(str(c.get("origin") or "?"), []).append(c)
    for origin, cands in sorted(by_origin.items()):
        first = cands[0]
        reason = (first.get("verdict") or {}).get("reason", "")
        why.append(
            f"{origin}: {len(cands)} candidate{'s' if len(cands) > 1 else ''}, none verified "
            f"({first['status']}: {reason[:160]})"
        )
    if not by_origin and not why:
        why.append("the offline search proposed no candidate for this reference")
    provider = (run.config or {}).get("provider") if run else None
    if provider == "offline":
        why.append(
            "no model was asked (no API key): set ANTHROPIC_API_KEY or OPENAI_API_KEY, or pass --provider, "
            "to let a model write kernels for it"
        )
    return why


def _display_name(task_path: Path, origin: dict[str, str] | None) -> str:
    if origin and origin.get("source_file") and origin.get("target_id"):
        return f"{Path(origin['source_file']).name}::{origin['target_id'].split(':', 1)[-1]}"
    return Path(task_path).name


def _format(s: dict[str, Any]) -> str:
    name = _display_name(Path(s["task"]), s)
    lines = [f"{name}: run {s['run_id']} · {s['headline']} · {s['stop_reason']}"]
    if s["best_candidate"] is None:
        lines.append("  no verified candidate; why:")
        lines += [f"    - {w}" for w in s.get("why_none") or ["no reason was recorded"]]
    elif not s["speed_measured"]:
        lines.append(
            f"  best: candidate {s['best_candidate']} ({s['best_backend']}) verified on the CPU; "
            "speed not measured (no GPU), so nothing is proposed as faster"
        )
    else:
        sc = s["best_speedup_compile"]
        lines.append(
            f"  best: candidate {s['best_candidate']} ({s['best_backend']}) "
            f"{s['best_speedup_eager']:.2f}x vs eager"
            + (f", {sc:.2f}x vs torch.compile" if sc else "")
            + (f"; not proposed: {s['not_proposed']}" if s.get("not_proposed") else "")
        )
    if s.get("compile_advice"):
        lines.append(f"  advice: {s['compile_advice']}")
    counts = ", ".join(f"{k} {v}" for k, v in sorted(s["candidates"].items())) or "none"
    lines.append(
        f"  candidates: {counts} · {s['tokens']:,} tokens · ${s['cost_usd']:.2f} · {s['elapsed_s']} s"
    )
    lines.append(f"  next: {_next_step(s)}")
    return "\n".join(lines)


def _next_step(s: dict[str, Any]) -> str:
    run = s["run_id"]
    if s["best_candidate"] is None:
        if not sum(s["candidates"].values()):
            return "let a model write candidates: set ANTHROPIC_API_KEY or OPENAI_API_KEY and run this again"
        return f"see every candidate and why it failed with `kernelevo show {run}`"
    if s["status"] == "improved":
        return f"preview the change with `kernelevo apply {run} --dry-run`, then `kernelevo apply {run}`"
    if not s["speed_measured"]:
        return (
            f"run the same command on a GPU machine to time it, or preview the kernel with "
            f"`kernelevo apply {run} --dry-run`"
        )
    return f"compare every candidate with `kernelevo report {run}`"


def _table(summaries: list[dict[str, Any]], cfg: Any, dispatcher: Any, elapsed: float) -> str:
    """The combined report of `--all`: one row per target, then what was spent in all."""

    def x(v: float | None) -> str:
        return f"{v:.2f}x" if v else "-"

    rows = [("target", "status", "vs eager", "vs compile", "verified/evaluated", "gpu", "time")]
    for s in summaries:
        name = (
            f"{Path(s['source_file']).name}::{s['target_id'].split(':', 1)[-1]}"
            if s.get("target_id") and s.get("source_file")
            else Path(s["task"]).name
        )
        if s["status"] == "failed":
            rows.append((name, "failed", "-", "-", "-", "-", f"{s['elapsed_s']} s"))
            continue
        counts = s["candidates"]
        rows.append(
            (
                name,
                s["status"],
                x(s["best_speedup_eager"]),
                x(s["best_speedup_compile"]),
                f"{counts.get('verified', 0)}/{sum(counts.values())}",
                s.get("gpu") or "-",
                f"{s['elapsed_s']} s",
            )
        )
    lines = render(rows)
    lines += [f"  {s['task']}: {s['error']}" for s in summaries if s["status"] == "failed"]
    tokens = sum(s.get("tokens", 0) for s in summaries)
    cost = sum(s.get("cost_usd", 0.0) for s in summaries)
    limits = [
        f"{cfg.budget_tokens:,} tokens" if cfg.budget_tokens else "",
        f"${cfg.budget_usd:.2f}" if cfg.budget_usd else "",
        f"{cfg.wall_s:.0f} s" if cfg.wall_s else "",
    ]
    budget = " · one budget: " + ", ".join(v for v in limits if v) if any(limits) else ""
    st = dispatcher.stats()
    per = ", ".join(f"{k} {v}" for k, v in st["per_worker"].items())
    improved = sum(1 for s in summaries if s["status"] == "improved")
    lines.append(
        f"{len(summaries)} targets · {improved} improved · {tokens:,} tokens · ${cost:.2f}{budget} · "
        f"{st['evaluations']} evaluations on {st['workers']} workers ({per})"
        + (f" · {st['requeued']} re-queued after lost workers" if st.get("requeued") else "")
        + f" · {elapsed:.1f} s"
    )
    return "\n".join(lines)
