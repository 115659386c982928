"""`kernelevo apply RUN [--dry-run]`: put a run's verified kernel into the user's code, as a diff."""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevo.cli import UserError
from kernelevo.targets.apply_facts import ApplyFacts, task_source_at

if TYPE_CHECKING:
    from kernelevo.outcome import RunOutcome


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "apply", help="apply a run's verified kernel to the file it came from (shows the diff)"
    )
    p.add_argument("run", help="run id (`kernelevo runs`)")
    p.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    p.add_argument(
        "--force",
        action="store_true",
        help="apply even though the kernel was not measured faster than eager and torch.compile",
    )
    p.add_argument("--store")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernelevo.store import Store, default_store_path
    from kernelevo.targets.apply import apply_candidate
    from kernelevo.targets.edits import ApplyError

    path = Path(args.store) if args.store else default_store_path()
    if not path.exists():
        raise UserError(f"{path}: no results store here; run `kernelevo optimize FILE::NAME` first")
    store = Store(path)
    rec = store.get_run(args.run)
    if rec is None:
        raise UserError(f"no run {args.run!r} in {store.path}; `kernelevo runs` lists them")
    source_file, target_id, source_hash = rec.source_file, rec.target_id, rec.source_hash
    if not source_file or not target_id:  # a run made on the task file `kernelevo task` wrote
        from kernelevo.targets.task_origin import task_origin

        origin = task_origin(rec.task_path)
        source_file, target_id = origin.get("Source file", ""), origin.get("Target id", "")
        if not source_file or not target_id:
            raise UserError(
                f"run {rec.id} optimized a task file ({rec.task_path}), not a target in your code; "
                f"use `kernelevo export {rec.id}` to get the kernel file"
            )
        source_hash = source_hash or origin.get("Source hash", "")
    workspace = store.path.resolve().parent.parent
    if not _inside(Path(source_file), workspace):
        raise UserError(
            f"run {rec.id} names {source_file}, which is outside this workspace ({workspace}); "
            "apply writes only inside the workspace the search ran in: run apply from there"
        )
    summary = rec.summary or {}
    best_id = summary.get("best_candidate")
    cand = store.get_candidate(int(best_id)) if best_id is not None else None
    if cand is None or cand["status"] != "verified":
        raise UserError(f"run {rec.id} has no verified candidate; nothing to apply")
    outcome = _outcome(summary)
    not_faster = not outcome.improved
    if not_faster and not args.force and not args.dry_run:
        raise UserError(
            f"run {rec.id}: {outcome.headline()}, so it is not proposed as faster than eager and "
            "torch.compile; preview it with --dry-run, or pass --force to apply it anyway"
        )
    facts = ApplyFacts.of_run(summary, run_id=rec.id, task_source=task_source_at(rec.task_path))
    facts = _constructor_args(
        replace(facts, source_hash=facts.source_hash or source_hash), rec.task_path, source_file
    )
    with tempfile.TemporaryDirectory() as tmp:
        cand_path = Path(tmp) / "candidate.py"
        cand_path.write_text(cand["source"])
        try:
            plan = apply_candidate(source_file, target_id, str(cand_path), facts, dry_run=True)
        except ApplyError as exc:
            raise UserError(str(exc)) from exc
        outside = [f.path for f in plan.files if not _inside(Path(f.path), workspace)]
        if outside:
            raise UserError(
                f"run {rec.id}: apply would write {outside[0]}, outside this workspace ({workspace}); "
                "nothing written"
            )
        if not args.dry_run:
            try:
                plan = apply_candidate(source_file, target_id, str(cand_path), facts, dry_run=False)
            except ApplyError as exc:
                raise UserError(str(exc)) from exc
    print(plan.diff)
    for note in plan.notes:
        print(f"note: {note}")
    devices = facts.device_kinds
    if devices == {"cpu"}:
        print(
            "note: verified on the CPU only (Triton's interpreter): the kernel is used only for CPU tensors "
            "under TRITON_INTERPRET=1, never for CUDA, until a search on a GPU machine verifies and times it there"
        )
    if not_faster:
        print(f"note: {outcome.headline()}; applied for review, not for speed")
    if args.dry_run:
        print(
            f"(dry run: nothing written; apply with `kernelevo apply {rec.id}"
            + (" --force" if not_faster else "")
            + "`)"
        )
    else:
        print(
            f"applied run {rec.id}: {len(plan.files)} files written; regression test: {plan.test_path}"
        )
        env = "TRITON_INTERPRET=1 " if devices == {"cpu"} else ""
        print(
            f"next: run the regression test ({env}python -m pytest {plan.test_path}); undo with your version control"
        )
    if _relative_imports_outside_package(source_file):
        print(
            f"note: {Path(source_file).name} uses relative imports but its folder is not a package here, so the "
            "regression test cannot import it; run it from the package's own checkout"
        )
    return 0


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder)
        return True
    except ValueError:
        return False


def _constructor_args(facts: ApplyFacts, task_path: str, source_file: str) -> ApplyFacts:
    """Constructor arguments the generated code needs, when the task builds them (config objects)."""
    from kernelevo.targets.apply_inputs import static_init_args

    small = facts.size == "small"
    if facts.init_args is not None or static_init_args(facts.task_source, small) is not None:
        return facts
    if not facts.task_source:
        return facts
    from kernelevo.targets.init_args import task_init_args
    from kernelevo.targets.input_sources import readable_roots

    found = task_init_args(task_path, readable_roots(source_file), small=small)
    return facts if found is None else replace(facts, init_args=list(found))


def _outcome(summary: dict[str, Any]) -> RunOutcome:
    """The run's outcome as the engine recorded it (runs from before outcomes: from the status)."""
    from kernelevo.outcome import RunOutcome, from_status

    if isinstance(summary.get("outcome"), dict) and summary["outcome"].get("kind"):
        return RunOutcome.from_dict(summary["outcome"])
    return from_status(
        str(summary.get("status") or ""),
        verified=True,
        speedup_eager=summary.get("speedup_eager"),
        speedup_compile=summary.get("speedup_compile"),
    )


def _relative_imports_outside_package(source_file: str) -> bool:
    import ast

    folder = Path(source_file).resolve().parent
    if (folder / "__init__.py").exists():
        return False
    try:
        tree = ast.parse(Path(source_file).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return False
    return any(isinstance(n, ast.ImportFrom) and n.level for n in tree.body)
