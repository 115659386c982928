"""`kernelevo optimize TARGET`: search for a faster verified kernel.

TARGET is a KernelBench-format task file, a folder of them (each is optimized in
turn), or FILE::NAME for a target found in ordinary code (`kernelevo detect`). With
`--all`, every target of a file or folder is searched at once, sharing the GPUs and one
budget, with a combined report. Candidates are evaluated on every visible GPU (`--gpus`),
on N CPU workers without a GPU (`--workers`), or on a Ray cluster (`--cluster`).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from kernelevo.cli import UserError
from kernelevo.cli.table import render
from kernelevo.outcome import OutcomeKind, RunOutcome


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "optimize", help="search for a faster verified kernel for a task or a target in your code"
    )
    p.add_argument("target", help="task file, folder of task files, or FILE::NAME")
    p.add_argument("--backend", choices=["triton", "cuda", "auto"], default="auto")
    p.add_argument(
        "--provider",
        help="anthropic, openai, openrouter, deepseek, vllm, ollama, replay or offline "
        "(default: offline when no API key is set)",
    )
    p.add_argument("--model", help="model name for the provider")
    p.add_argument("--base-url", help="OpenAI-compatible or Anthropic endpoint URL")
    p.add_argument(
        "--budget-tokens", type=positive_int, help="stop before spending more tokens than this"
    )
    p.add_argument(
        "--budget-usd", type=positive_float, help="stop before spending more than this many dollars"
    )
    p.add_argument("--wall-time", type=positive_float, help="stop after this many seconds")
    p.add_argument(
        "--iterations",
        type=positive_int,
        default=None,
        help="number of proposal iterations (default 20)",
    )
    p.add_argument(
        "--patience", type=positive_int, help="stop after N iterations without improvement"
    )
    p.add_argument(
        "--script",
        help="with FILE::NAME: a script that calls the target; its arguments become the "
        "task's inputs (otherwise a task built before is reused, or one is built)",
    )
    p.add_argument(
        "--concurrency",
        type=positive_int,
        default=None,
        help="model proposals in flight at once per search (default: as many as keep a candidate waiting "
        "for each GPU, from the measured reply and verdict times, at most --max-in-flight)",
    )
    p.add_argument(
        "--max-in-flight",
        type=positive_int,
        default=96,
        help="most model requests open at once (default 96; halved while the provider answers 429)",
    )
    p.add_argument(
        "--max-tokens",
        type=positive_int,
        help="reply limit per model call, thinking included "
        '(default: the config file\'s [models."M"], else 16384)',
    )
    p.add_argument(
        "--thinking-tokens",
        type=positive_int,
        help="extended thinking budget per call (Anthropic; at least 1024)",
    )
    p.add_argument(
        "--effort",
        choices=["low", "medium", "high", "max"],
        help="reasoning effort where the API has it",
    )
    p.add_argument(
        "--repair-tries",
        type=int,
        default=3,
        help="times a failing candidate goes back to the model",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--device", choices=["cpu", "cuda"], help="where candidates run (default: cuda when found)"
    )
    p.add_argument(
        "--size", choices=["small", "default"], help="input shapes (default: small without a GPU)"
    )
    p.add_argument(
        "--resume", metavar="RUN", help="continue a killed run (no paid call is repeated)"
    )
    p.add_argument("--json-out", metavar="FILE", help="write the run summary as JSON")
    p.add_argument("--progress", choices=["text", "json", "none"], default="text")
    p.add_argument("--store", help="results store (default: .kernelevo/store.sqlite)")
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run candidates without isolation where the sandbox cannot start (verdicts say so)",
    )
    p.add_argument(
        "--no-offline-seeds",
        action="store_false",
        dest="offline_seeds",
        help="do not seed the search with template and Inductor-extracted candidates",
    )
    p.add_argument(
        "--all",
        action="store_true",
        dest="all_targets",
        help="search every target of FILE (or of every file in a folder) at once: shared GPUs, one budget, "
        "a combined report",
    )
    p.add_argument(
        "--gpus",
        type=_gpu_list,
        metavar="0,1,...",
        help="GPUs to evaluate on (nvidia-smi indexes; default: every visible GPU)",
    )
    p.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help="evaluation workers without a GPU (default 1), or Ray workers with --cluster "
        "(default: one per GPU of the cluster, or per CPU when it has none)",
    )
    p.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="evaluate on a Ray cluster: auto, local (start one here), ray://HOST:PORT or HOST:PORT "
        "(needs: pip install 'kernelevo[ray]')",
    )
    p.set_defaults(handler=run)


def _gpu_list(text: str) -> list[int]:
    try:
        gpus = [int(g) for g in text.split(",") if g.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected GPU indexes like 0,1,3") from None
    if not gpus or any(g < 0 for g in gpus):
        raise argparse.ArgumentTypeError(f"{text!r}: expected GPU indexes like 0,1,3")
    return gpus


def _tasks(target: str, script: str | None = None) -> list[tuple[Path, dict[str, str]]]:
    if "::" in target:
        file, name = target.split("::", 1)
        return [_build_target(file, name, script=script)]
    path = Path(target)
    if path.is_dir():
        tasks = sorted(p for p in path.glob("*.py") if not p.name.startswith("_"))
        if not tasks:
            raise UserError(f"{path}: no task files (*.py) in this folder")
        return [(p, {}) for p in tasks]
    if not path.exists():
        raise UserError(f"{path}: no such file; give a task file, a folder of tasks or FILE::NAME")
    if not _is_task(path) and _user_targets(path):
        raise UserError(
            f"{path}: not a task file; give one target (FILE::NAME, see `kernelevo detect {path}`) "
            "or search them all with --all"
        )
    return [(path, {})]


def _is_task(path: Path) -> bool:
    from kernelevo.task import TaskError, read_task

    try:
        read_task(path)
        return True
    except TaskError:
        return False


def _user_targets(path: Path) -> list[Any]:
    from kernelevo.targets.detect import detect_file

    return list(detect_file(str(path)).targets)


def _build_target(
    file: str, name: str, script: str | None = None, quiet: bool = False
) -> tuple[Path, dict[str, str]]:
    """A task for a target in ordinary code (the one built before when its code is unchanged and
    no --script asks for new inputs), and where it came from."""
    from kernelevo.targets.extract import ExtractError, build_task, reusable_task

    if not Path(file).is_file():
        raise UserError(f"{file}: no such file")
    if script is not None and not Path(script).is_file():
        raise UserError(f"{script}: no such script")
    found = reusable_task(file, name) if script is None else None
    if found is not None:
        path, target = found
        if not quiet:
            from kernelevo.targets.extract import task_origin

            sizes = task_origin(path).get("CPU sizes")
            print(
                f"kernelevo: reusing the task built before: {path} (same code; `kernelevo task {file}::{name}` "
                "rebuilds it)" + (f"; CPU sizes {sizes}" if sizes else ""),
                file=sys.stderr,
            )
        return Path(path), {
            "source_file": str(Path(file).resolve()),
            "target_id": target.id,
            "source_hash": target.source_hash,
        }
    if not quiet:
        print(
            f"kernelevo: building the task for {file}::{name} (finding example inputs)...",
            file=sys.stderr,
            flush=True,
        )
    try:
        built = build_task(file, name, script=script)
    except ExtractError as exc:
        raise UserError(str(exc)) from exc
    assert built.path is not None
    if not quiet:
        print(f"kernelevo: task {built.path}; example inputs {built.inputs}", file=sys.stderr)
    return Path(built.path), {
        "source_file": str(Path(file).resolve()),
        "target_id": built.target.id,
        "source_hash": built.target.source_hash,
    }


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number, e.g. 600") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text}: must be more than 0")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number, e.g. 20") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be 1 or more")
    return value


def _all_targets(target: str) -> tuple[list[tuple[Path, dict[str, str]]], list[str]]:
    """Every target under TARGET (task files as they are, targets in ordinary code built into
    tasks) and, for those that could not be built, why."""
    if "::" in target:
        file, name = target.split("::", 1)
        return [_build_target(file, name)], []
    path = Path(target)
    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    files = (
        sorted(p for p in path.glob("*.py") if not p.name.startswith("_"))
        if path.is_dir()
        else [path]
    )
    found: list[tuple[Path, dict[str, str]]] = []
    skipped: list[str] = []
    for f in files:
        if _is_task(f):
            found.append((f, {}))
            continue
        for t in _user_targets(f):
            try:
                found.append(_build_target(str(f), t.id, quiet=True))
            except UserError as exc:
                skipped.append(str(exc))
    if not found:
        raise UserError(
            f"{path}: no target could be searched" + (f" ({skipped[0]})" if skipped else "")
        )
    return found, skipped


class Printer:
    """Progress on the terminal (one updating line) or as JSON lines for the language server."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.tty = sys.stderr.isatty()

    def __call__(self, event: dict[str, Any]) -> None:
        if self.mode == "json":
            sys.stdout.write(json.dumps(event) + "\n")
            sys.stdout.flush()
        elif self.mode == "text" and event.get("event") == "status":
            prefix = "\r\033[K" if self.tty else ""
            sys.stderr.write(f"{prefix}kernelevo: {event.get('message', '')}\n")
            sys.stderr.flush()
        elif self.mode == "text" and event.get("event") == "progress":
            from kernelevo.search.progress import ProgressEvent

            line = ProgressEvent.from_dict(event).line(event.get("task"))
            sys.stderr.write(("\r\033[K" if self.tty else "") + line + ("" if self.tty else "\n"))
            sys.stderr.flush()

    def done(self) -> None:
        if self.mode == "text" and self.tty:
            sys.stderr.write("\n")


def run(args: argparse.Namespace) -> int:
    from kernelevo.measure.machine import probe
    from kernelevo.optimize import default_provider
    from kernelevo.store import Store
    from kernelevo.task import TaskError

    if args.all_targets and args.resume:
        raise UserError("--all and --resume do not go together; resume one run at a time")
    store = Store(args.store) if args.store else Store()
    from kernelevo.llm import LLMError

    try:
        provider = args.provider or default_provider()
    except LLMError as exc:  # a broken config file
        raise UserError(str(exc)) from exc
    printer = Printer(args.progress)
    skipped: list[str] = []
    if args.resume:
        run_rec = store.get_run(args.resume)
        if run_rec is None:
            raise UserError(f"no run {args.resume!r} in {store.path}; `kernelevo runs` lists them")
        targets: list[tuple[Path, dict[str, str]]] = [(Path(run_rec.task_path), {})]
    else:
        try:
            if args.script and "::" not in args.target:
                raise UserError(
                    f"--script goes with FILE::NAME (one target in your code), not {args.target}"
                )
            targets, skipped = (
                _all_targets(args.target)
                if args.all_targets
                else (_tasks(args.target, args.script), [])
            )
        except TaskError as exc:
            raise UserError(str(exc)) from exc
    for why in skipped:
        print(f"kernelevo: skipped: {why}", file=sys.stderr)
    device = args.device or (None if args.cluster else ("cuda" if probe().has_gpu else "cpu"))
    dispatcher = _open_dispatcher(args, device, store)
    if hasattr(dispatcher, "warm_in_background"):
        dispatcher.warm_in_background()
    try:
        return _run_targets(args, targets, dispatcher, store, provider, printer)
    finally:
        dispatcher.close()


def _open_dispatcher(args: argparse.Namespace, device: str | None, store: Any) -> Any:
    from kernelevo.dispatch import DispatchError, open_dispatcher

    if device == "cpu" and args.gpus and not args.cluster:
        print(
            "kernelevo: --gpus ignored: candidates run on the CPU here (use --workers N)",
            file=sys.stderr,
        )
    try:
        return open_dispatcher(
            device,
            gpus=None if device == "cpu" else args.gpus,
            workers=args.workers,
            cluster=args.cluster,
            store=store,
        )
    except DispatchError as exc:
        raise UserError(str(exc)) from exc


def _run_targets(
    args: argparse.Namespace,
    targets: list[tuple[Path, dict[str, str]]],
    dispatcher: Any,
    store: Any,
    provider: str,
    printer: Printer,
) -> int:
    from kernelevo.optimize import optimize_many, optimize_task
    from kernelevo.search.loop import SearchConfig
    from kernelevo.search.resume import ResumeError
    from kernelevo.task import TaskError

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    started: list[str] = []

    def events(event: dict[str, Any]) -> None:
        if event.get("event") == "start":
            started.append(event["run_id"])
        printer(event)

    device = dispatcher.device
    cfg = SearchConfig(
        backend=args.backend,
        provider=provider,
        model=args.model,
        budget_tokens=args.budget_tokens,
        budget_usd=args.budget_usd,
        wall_s=args.wall_time,
        iterations=args.iterations if args.iterations is not None else 20,
        patience=args.patience,
        concurrency=args.concurrency,
        max_in_flight=max(1, args.max_in_flight),
        max_tokens=args.max_tokens,
        thinking_tokens=args.thinking_tokens,
        effort=args.effort,
        repair_tries=args.repair_tries,
        seed=args.seed,
        device=device,
        size=args.size,
        base_url=args.base_url,
        offline_seeds=args.offline_seeds,
    )
    summaries: list[dict[str, Any]] = []
    failed = False
    try:
        if args.all_targets:
            t0 = time.monotonic()
            outcomes = optimize_many(
                targets, cfg, store=store, dispatcher=dispatcher, events=events
            )
            printer.done()
            for o in outcomes:
                if o.result is None:
                    failed = True
                    outcome = RunOutcome(OutcomeKind.FAILED, reasons=(o.error or "",))
                    summaries.append(
                        {
                            "task": str(o.task_path),
                            "target_id": o.origin.get("target_id"),
                            "status": "failed",
                            "outcome": outcome.to_dict(),
                            "error": o.error,
                            "elapsed_s": round(o.elapsed_s, 1),
                        }
                    )
                    printer({"event": "error", "task": o.task_path.stem, "message": o.error})
                    continue
                summary = _summary(o.task_path, o.result, device, o.elapsed_s, o.origin, store)
                summaries.append(summary)
                _done(printer, summary, o.task_path.stem)
            if args.progress != "json":
                print(_table(summaries, cfg, dispatcher, time.monotonic() - t0))
        else:
            for task_path, origin in targets:
                t0 = time.monotonic()
                if args.progress == "text" and not args.resume:
                    print(
                        f"kernelevo: searching {_display_name(task_path, origin)} on {device}: offline candidates "
                        "first (templates, Inductor extraction)...",
                        file=sys.stderr,
                        flush=True,
                    )
                try:
                    result = optimize_task(
                        task_path,
                        replace(
                            cfg,
                            source_file=origin.get("source_file", cfg.source_file),
                            target_id=origin.get("target_id", cfg.target_id),
                            source_hash=origin.get("source_hash", cfg.source_hash),
                        ),
                        store=store,
                        events=events,
                        resume=args.resume,
                        dispatcher=dispatcher,
                    )
                except (TaskError, ResumeError) as exc:
                    raise UserError(str(exc)) from exc
                printer.done()
                summary = _summary(task_path, result, device, time.monotonic() - t0, origin, store)
                summaries.append(summary)
                _done(printer, summary)
                if args.progress != "json":
                    print(_format(summary))
    except KeyboardInterrupt:
        printer.done()
        for run_id in started:
            rec = store.get_run(run_id)
            if rec is not None and rec.status == "running":
                store.update_run(run_id, status="cancelled")
                printer(
                    {
                        "event": "done",
                        "run_id": run_id,
                        "status": "cancelled",
                        "outcome": RunOutcome(OutcomeKind.CANCELLED).to_dict(),
                    }
                )
                print(
                    f"stopped; resume with: kernelevo optimize --resume {run_id} {args.target}",
                    file=sys.stderr,
                )
        return 130
    except Exception as exc:  # model errors carry a message meant for the user
        from kernelevo.llm import LLMError

        if isinstance(exc, LLMError):
            printer.done()
            print(f"kernelevo: error: {exc}", file=sys.stderr)
            return 1
        raise
    if args.json_out:
        out = summaries if (args.all_targets or len(summaries) > 1) else summaries[0]
        Path(args.json_out).write_text(json.dumps(out, indent=2))
    return 1 if failed else 0


def _done(printer: Printer, s: dict[str, Any], task: str | None = None) -> None:
    event = {
        "event": "done",
        "run_id": s["run_id"],
        "status": s["status"],
        "outcome": s["outcome"],
        "best_speedup": s["best_speedup_eager"],
        "best_speedup_compile": s["best_speedup_compile"],
        "tokens": s["tokens"],
        "cost_usd": s["cost_usd"],
    }
    printer({**event, "task": task} if task else event)


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
    t = (best.verdict.get("timings") or {}) if best else {}
    where = (best.verdict.get("device") or {}) if best else {}
    advice = (
        compile_advice(t, result.status, best.verdict.get("phases") if best else None)
        if t
        else None
    )
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
