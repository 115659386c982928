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

from kernelevo.cli import (
    UserError,
    at_most,
    count,
    output_file,
    positive_float,
    positive_int,
    seconds,
    seed_int,
)
from kernelevo.cli.optimize_report import (
    Printer,
    _display_name,
    _done,
    _format,
    _summary,
    _table,
)
from kernelevo.cli.optimize_targets import (
    _all_targets,
    _tasks,
)
from kernelevo.outcome import OutcomeKind, RunOutcome
from kernelevo.search.events import Done, SearchEvent, SearchFailed, Started

PAST_FLOOR = "keep searching after a kernel is within 5%% of the task's roofline floor"


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
    p.add_argument("--wall-time", type=seconds, help="stop after this many seconds")
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
        type=at_most(1024, "requests open at once"),
        default=None,
        help="model proposals in flight at once per search (default: as many as keep a candidate waiting "
        "for each GPU, from the measured reply and verdict times, at most --max-in-flight)",
    )
    slots = (
        "verdicts at once per GPU (default: up to 8, one per 8 GiB of the GPU's memory and two "
        "cores; 1 on the CPU): their checks overlap, timing runs alone"
    )
    p.add_argument(
        "--slots-per-gpu",
        type=at_most(8, "each slot is a judge and a runner"),
        default=None,
        help=slots,
    )
    p.add_argument(
        "--max-in-flight",
        type=at_most(1024, "requests open at once"),
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
        type=count,
        default=3,
        help="times a failing candidate goes back to the model",
    )
    p.add_argument("--seed", type=seed_int, default=0)
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
    p.add_argument("--past-floor", action="store_false", dest="stop_at_floor", help=PAST_FLOOR)
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
        type=at_most(4096, "each worker is a process"),
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


def run(args: argparse.Namespace) -> int:
    from kernelevo.measure.machine import probe
    from kernelevo.optimize import default_provider
    from kernelevo.store import Store
    from kernelevo.task import TaskError
    from kernelevo.worker.sandbox_view import cache_dirs

    if args.all_targets and args.resume:
        raise UserError("--all and --resume do not go together; resume one run at a time")
    if args.json_out:
        output_file.check(Path(args.json_out), "--json-out")
    store = Store(args.store) if args.store else Store()
    cache_dirs()  # a cache folder that cannot be made: said before the search, not after it
    from kernelevo.llm import LLMError
    from kernelevo.llm.provider_config import check_provider, load_config

    try:
        provider = args.provider or default_provider()
        check_provider(provider, load_config())  # before any worker starts
    except LLMError as exc:  # a broken config file, an unknown provider
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
            slots_per_gpu=args.slots_per_gpu
            or (None if device == "cuda" and not args.cluster else 1),
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

    def events(event: SearchEvent) -> None:
        if isinstance(event, Started):
            started.append(event.run_id)
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
        stop_at_floor=args.stop_at_floor,
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
                    printer(SearchFailed(o.error or "", task=o.task_path.stem))
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
        print("kernelevo: interrupted", file=sys.stderr)
        for run_id in started:
            rec = store.get_run(run_id)
            if rec is not None and rec.status == "running":
                store.update_run(run_id, status="cancelled")
                printer(Done(run_id, "cancelled", RunOutcome(OutcomeKind.CANCELLED).to_dict()))
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
        output_file.write(Path(args.json_out), json.dumps(out, indent=2), "--json-out")
    return 1 if failed else 0
