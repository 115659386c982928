"""`kernelevo runs`, `show RUN`, `export RUN`, `report RUN`: looking back at searches."""

from __future__ import annotations

import argparse
import fcntl
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevo.cli import UserError, output_file, positive_int
from kernelevo.cli.table import render
from kernelevo.phase import Phase

if TYPE_CHECKING:
    from kernelevo.store import RunRecord, Store


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("runs", help="list optimize runs in the store")
    p.add_argument("--limit", type=positive_int, default=20, help="most runs listed (default 20)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--store")
    p.set_defaults(handler=list_runs)
    p = sub.add_parser("show", help="show one run: summary and candidates")
    p.add_argument("run")
    p.add_argument("--json", action="store_true")
    p.add_argument("--store")
    p.set_defaults(handler=show)
    p = sub.add_parser("export", help="write a run's best verified candidate file")
    p.add_argument("run")
    p.add_argument("-o", "--output", help="file to write (default: <task>_kernelevo_<run>.py here)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.add_argument("--store")
    p.set_defaults(handler=export)
    p = sub.add_parser("report", help="write a self-contained HTML report of a run")
    p.add_argument("run")
    p.add_argument("-o", "--output", help="file to write (default: kernelevo-report-<run>.html)")
    p.add_argument(
        "--force", action="store_true", help="overwrite an existing file that is not a report"
    )
    p.add_argument("--store")
    p.set_defaults(handler=report)


def _store(args: argparse.Namespace) -> Store:
    from kernelevo.store import Store, default_store_path

    path = Path(args.store) if args.store else default_store_path()
    if not path.exists():
        raise UserError(
            f"{path}: no results store here; run `kernelevo optimize` first or pass --store"
        )
    return Store(path)


def _run(store: Store, run_id: str) -> RunRecord:
    run = store.get_run(run_id)
    if run is None:
        raise UserError(f"no run {run_id!r} in {store.path}; `kernelevo runs` lists them")
    return run


def list_runs(args: argparse.Namespace) -> int:
    store = _store(args)
    runs = store.list_runs(args.limit)
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "id": r.id,
                        "task": r.task_path,
                        "target": _target_name(r),
                        "status": _status(store, r),
                        "created_at": r.created_at,
                        "summary": r.summary,
                    }
                    for r in runs
                ]
            )
        )
        return 0
    if not runs:
        print("no runs yet; start one with `kernelevo optimize FILE::NAME`")
        return 0
    rows = [("run", "started", "state", "target", "result", "vs eager", "tokens")]
    for r in runs:
        s = r.summary or {}
        sp = s.get("speedup_eager")
        rows.append(
            (
                r.id,
                time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at)),
                _status(store, r),
                _target_name(r),
                str(s.get("status") or "-"),
                f"{sp:.2f}x" if sp else "-",
                f"{(s.get('usage') or {}).get('tokens', 0):,}",
            )
        )
    print("\n".join(render(rows)))
    crashed = [r.id for r in runs if _status(store, r) == "crashed"]
    if crashed:
        print(
            f"crashed runs stopped without finishing; continue one with `kernelevo optimize --resume {crashed[0]}`"
        )
    return 0


def _target_name(r: RunRecord) -> str:
    """`file.py::Target` for a target in the user's code, else the task file's name."""
    from kernelevo.targets.task_origin import task_origin

    source, target = r.source_file, r.target_id
    if not source or not target:
        origin = task_origin(r.task_path)
        source, target = origin.get("Source file", ""), origin.get("Target id", "")
    if source and target:
        return f"{Path(source).name}::{target.split(':', 1)[-1]}"
    return Path(r.task_path).name


def _status(store: Store, r: RunRecord) -> str:
    """A run still marked running that no process holds has crashed (and can be resumed)."""
    if r.status != "running":
        return r.status
    lock = store.path.parent / "runs" / r.id / "lock"
    if not lock.parent.is_dir():
        return "crashed"
    try:
        with open(lock, "a+") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    except OSError:
        return "running"
    return "crashed"


def _text(value: Any, empty: str = "-") -> str:
    """A stored value for people: no None, {} or [] reprs."""
    if value is None or value == {} or value == [] or value == "":
        return empty
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in sorted(value.items()))
    return str(value)


def show(args: argparse.Namespace) -> int:

    store = _store(args)
    run = _run(store, args.run)
    cands = store.candidates(run.id)
    if args.json:
        print(
            json.dumps(
                {
                    "run": run.__dict__,
                    "candidates": [{k: v for k, v in c.items() if k != "source"} for c in cands],
                },
                default=str,
            )
        )
        return 0
    s = run.summary or {}
    cfg = run.config or {}
    print(f"run {run.id} · {_status(store, run)} · {_target_name(run)} (task {run.task_path})")
    model = f" {cfg['model']}" if cfg.get("model") else ""
    print(
        f"  provider {_text(cfg.get('provider'))}{model} · backend {_text(cfg.get('backend'))}"
        f" · device {_text(cfg.get('device'))}"
    )
    if s:
        print(
            f"  result {_text(s.get('status'))} · best candidate {_text(s.get('best_candidate'), 'none')}"
            f" · stop: {_text(s.get('stop_reason'))}"
        )
        u = s.get("usage") or {}
        print(
            f"  {u.get('tokens', 0):,} tokens · ${u.get('cost_usd', 0):.2f} · candidates "
            f"{_text(s.get('counts'), 'none')}"
        )
        for note in s.get("notes") or []:
            print(f"  note: {note}")
    rows = []
    for c in cands:
        sp = c.get("speedup_eager")
        try:
            phase = Phase.of_row(c).label()
        except (KeyError, TypeError, ValueError):
            phase = _text(c.get("iteration"))
        rows.append(
            [
                f"#{c['id']}",
                phase,
                str(c["origin"]),
                str(c["backend"]),
                str(c["status"]),
                f"{sp:.2f}x" if sp else "not timed",
                (c["verdict"].get("reason") or "")[:90],
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(7)] if rows else []
    for r in rows:  # columns as wide as their longest entry, so long origins stay aligned
        print("  " + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    return 0


def export(args: argparse.Namespace) -> int:
    store = _store(args)
    run = _run(store, args.run)
    best_id = (run.summary or {}).get("best_candidate")
    if best_id is None:
        raise UserError(f"run {run.id} has no verified candidate to export")
    cand = store.get_candidate(int(best_id))
    if cand is None or cand["status"] != "verified":
        raise UserError(f"run {run.id}: best candidate {best_id} is not verified; nothing exported")
    out = Path(args.output or f"{Path(run.task_path).stem}_kernelevo_{run.id}.py")
    if out.exists() and not args.force:
        raise UserError(f"{out}: exists; pass --force to overwrite or -o to choose another file")
    output_file.write(out, cand["source"], "-o")
    print(f"wrote {out} (candidate {best_id}, {cand['backend']}, run {run.id})")
    return 0


def report(args: argparse.Namespace) -> int:
    from kernelevo.report import GENERATOR, render_report

    store = _store(args)
    run = _run(store, args.run)
    out = Path(args.output or f"kernelevo-report-{run.id}.html")
    if out.is_file() and not args.force and not _is_report(out, GENERATOR):
        raise UserError(
            f"{out}: exists and is not a KernelEvo report; pass --force to overwrite it or -o to "
            "choose another file"
        )
    output_file.write(
        out, render_report(run, store.candidates(run.id), store.llm_calls(run.id)), "-o"
    )
    print(f"wrote {out}")
    return 0


def _is_report(path: Path, generator: str) -> bool:
    """A report written earlier (regenerating it loses nothing the user wrote)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return f'content="{generator}"' in fh.read(4096)
    except OSError:
        return False
