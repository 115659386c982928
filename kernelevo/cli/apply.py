"""`kernelevo apply RUN [--dry-run]`: put a run's verified kernel into the user's code, as a diff."""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from kernelevo.cli import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("apply", help="apply a run's verified kernel to the file it came from (shows the diff)")
    p.add_argument("run", help="run id (`kernelevo runs`)")
    p.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    p.add_argument("--force", action="store_true",
                   help="apply even though the kernel was not measured faster than eager and torch.compile")
    p.add_argument("--store")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernelevo.store import Store, default_store_path
    from kernelevo.targets.edits import ApplyError
    from kernelevo.targets.apply import apply_candidate

    path = Path(args.store) if args.store else default_store_path()
    if not path.exists():
        raise UserError(f"{path}: no results store here; run `kernelevo optimize FILE::NAME` first")
    store = Store(path)
    rec = store.get_run(args.run)
    if rec is None:
        raise UserError(f"no run {args.run!r} in {store.path}; `kernelevo runs` lists them")
    if not rec.source_file or not rec.target_id:
        raise UserError(f"run {rec.id} optimized a task file ({rec.task_path}), not a target in your code; "
                        f"use `kernelevo export {rec.id}` to get the kernel file")
    summary = rec.summary or {}
    best_id = summary.get("best_candidate")
    cand = store.get_candidate(int(best_id)) if best_id is not None else None
    if cand is None or cand["status"] != "verified":
        raise UserError(f"run {rec.id} has no verified candidate; nothing to apply")
    if summary.get("status") != "improved" and not args.force:
        raise UserError(f"run {rec.id}: the kernel was verified but not measured faster than eager and torch.compile "
                        f"({summary.get('status')}); pass --force to apply it anyway")
    meta = dict(summary)
    meta.setdefault("source_hash", rec.source_hash)
    meta["run_id"] = rec.id
    try:
        meta["task_source"] = Path(rec.task_path).read_text()
    except OSError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        cand_path = Path(tmp) / "candidate.py"
        cand_path.write_text(cand["source"])
        try:
            plan = apply_candidate(rec.source_file, rec.target_id, str(cand_path), meta, dry_run=args.dry_run)
        except ApplyError as exc:
            raise UserError(str(exc)) from exc
    print(plan.diff)
    for note in plan.notes:
        print(f"note: {note}")
    if args.dry_run:
        print(f"(dry run: nothing written; apply with `kernelevo apply {rec.id}`)")
    else:
        print(f"applied run {rec.id}: {len(plan.files)} files written; regression test: {plan.test_path}")
    return 0
