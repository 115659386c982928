"""`kernelevo runs`, `show RUN`, `export RUN`, `report RUN`: looking back at searches."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from kernelevo.cli import UserError
from kernelevo.search.phase import Phase


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="list optimize runs in the store")
    p.add_argument("--limit", type=int, default=20)
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
    p.add_argument("--store")
    p.set_defaults(handler=report)


def _store(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from kernelevo.store import Store, default_store_path

    path = Path(args.store) if args.store else default_store_path()
    if not path.exists():
        raise UserError(f"{path}: no results store here; run `kernelevo optimize` first or pass --store")
    return Store(path)


def _run(store, run_id: str):  # type: ignore[no-untyped-def]
    run = store.get_run(run_id)
    if run is None:
        raise UserError(f"no run {run_id!r} in {store.path}; `kernelevo runs` lists them")
    return run


def list_runs(args: argparse.Namespace) -> int:
    store = _store(args)
    runs = store.list_runs(args.limit)
    if args.json:
        print(json.dumps([{"id": r.id, "task": r.task_path, "status": r.status, "created_at": r.created_at,
                           "summary": r.summary} for r in runs]))
        return 0
    if not runs:
        print("no runs yet")
    for r in runs:
        s = r.summary or {}
        sp = s.get("speedup_eager")
        print(f"{r.id}  {time.strftime('%Y-%m-%d %H:%M', time.localtime(r.created_at))}  {r.status:<9} "
              f"{Path(r.task_path).name:<24} {s.get('status', ''):<15} "
              f"{f'{sp:.2f}x' if sp else '-':>7}  {s.get('usage', {}).get('tokens', 0):>9,} tokens")
    return 0


def show(args: argparse.Namespace) -> int:
    store = _store(args)
    run = _run(store, args.run)
    cands = store.candidates(run.id)
    if args.json:
        print(json.dumps({"run": run.__dict__, "candidates": [{k: v for k, v in c.items() if k != "source"}
                                                              for c in cands]}, default=str))
        return 0
    s = run.summary or {}
    print(f"run {run.id} · {run.status} · task {run.task_path}")
    print(f"  provider {run.config.get('provider')} {run.config.get('model') or ''} · backend {run.config.get('backend')}"
          f" · device {run.config.get('device')}")
    if s:
        print(f"  result {s.get('status')} · best candidate {s.get('best_candidate')} · stop: {s.get('stop_reason')}")
        u = s.get("usage", {})
        print(f"  {u.get('tokens', 0):,} tokens · ${u.get('cost_usd', 0):.2f} · candidates {s.get('counts')}")
    for c in cands:
        sp = c.get("speedup_eager")
        print(f"  #{c['id']:<4} {Phase.of_row(c).label():<22} {c['origin']:<10} {c['backend']:<11} {c['status']:<14}"
              f" {f'{sp:.2f}x' if sp else '':>7}  {c['verdict'].get('reason', '')[:90]}")
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
    out.write_text(cand["source"])
    print(f"wrote {out} (candidate {best_id}, {cand['backend']}, run {run.id})")
    return 0


def report(args: argparse.Namespace) -> int:
    from kernelevo.report import render_report

    store = _store(args)
    run = _run(store, args.run)
    out = Path(args.output or f"kernelevo-report-{run.id}.html")
    out.write_text(render_report(run, store.candidates(run.id), store.llm_calls(run.id)))
    print(f"wrote {out}")
    return 0
