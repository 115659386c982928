"""`kernelevo optimize TARGET`: search for a faster verified kernel.

TARGET is a KernelBench-format task file, a folder of them (each is optimized in
turn), or FILE::NAME for a target found in ordinary code (`kernelevo detect`).
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from kernelevo.cli import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("optimize", help="search for a faster verified kernel for a task or a target in your code")
    p.add_argument("target", help="task file, folder of task files, or FILE::NAME")
    p.add_argument("--backend", choices=["triton", "cuda", "auto"], default="auto")
    p.add_argument("--provider", help="anthropic, openai, openrouter, deepseek, vllm, ollama, replay or offline "
                                      "(default: offline when no API key is set)")
    p.add_argument("--model", help="model name for the provider")
    p.add_argument("--base-url", help="OpenAI-compatible or Anthropic endpoint URL")
    p.add_argument("--budget-tokens", type=int, help="stop before spending more tokens than this")
    p.add_argument("--budget-usd", type=float, help="stop before spending more than this many dollars")
    p.add_argument("--wall-time", type=float, help="stop after this many seconds")
    p.add_argument("--iterations", type=int, default=None, help="number of proposal iterations (default 20)")
    p.add_argument("--patience", type=int, help="stop after N iterations without improvement")
    p.add_argument("--concurrency", type=int, default=2, help="model proposals in flight at once")
    p.add_argument("--repair-tries", type=int, default=3, help="times a failing candidate goes back to the model")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=["cpu", "cuda"], help="where candidates run (default: cuda when found)")
    p.add_argument("--size", choices=["small", "default"], help="input shapes (default: small without a GPU)")
    p.add_argument("--resume", metavar="RUN", help="continue a killed run (no paid call is repeated)")
    p.add_argument("--json-out", metavar="FILE", help="write the run summary as JSON")
    p.add_argument("--progress", choices=["text", "json", "none"], default="text")
    p.add_argument("--store", help="results store (default: .kernelevo/store.sqlite)")
    p.set_defaults(handler=run)


def _tasks(target: str) -> list[tuple[Path, dict[str, str]]]:
    if "::" in target:
        from kernelevo.targets.build import build_task_for_cli

        return [build_task_for_cli(target)]
    path = Path(target)
    if path.is_dir():
        tasks = sorted(p for p in path.glob("*.py") if not p.name.startswith("_"))
        if not tasks:
            raise UserError(f"{path}: no task files (*.py) in this folder")
        return [(p, {}) for p in tasks]
    if not path.exists():
        raise UserError(f"{path}: no such file; give a task file, a folder of tasks or FILE::NAME")
    return [(path, {})]


class Printer:
    """Progress on the terminal (one updating line) or as JSON lines for the language server."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.tty = sys.stderr.isatty()

    def __call__(self, event: dict[str, Any]) -> None:
        if self.mode == "json":
            sys.stdout.write(json.dumps(event) + "\n")
            sys.stdout.flush()
        elif self.mode == "text" and event.get("event") == "progress":
            best = event.get("best_speedup")
            best_s = f"{best:.2f}x" if best else ("verified, speed not measured" if event.get("verified") else "none yet")
            line = (f"iter {event['iteration']:>3} · evaluated {event['evaluated']} · best {best_s} · "
                    f"{event['tokens']:,} tokens · ${event['cost_usd']:.2f} · {event['message']}")
            sys.stderr.write(("\r\033[K" if self.tty else "") + line + ("" if self.tty else "\n"))
            sys.stderr.flush()

    def done(self) -> None:
        if self.mode == "text" and self.tty:
            sys.stderr.write("\n")


def run(args: argparse.Namespace) -> int:
    from kernelevo.machine import probe
    from kernelevo.optimize import default_provider, optimize_task
    from kernelevo.search.loop import SearchConfig
    from kernelevo.store import Store
    from kernelevo.task import TaskError

    store = Store(args.store) if args.store else Store()
    device = args.device or ("cuda" if probe().has_gpu else "cpu")
    provider = args.provider or default_provider()
    printer = Printer(args.progress)

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    summaries = []
    if args.resume:
        run_rec = store.get_run(args.resume)
        if run_rec is None:
            raise UserError(f"no run {args.resume!r} in {store.path}; `kernelevo runs` lists them")
        targets = [(Path(run_rec.task_path), {})]
    else:
        try:
            targets = _tasks(args.target)
        except TaskError as exc:
            raise UserError(str(exc)) from exc
    for task_path, origin in targets:
        cfg = SearchConfig(backend=args.backend, provider=provider, model=args.model, budget_tokens=args.budget_tokens,
                           budget_usd=args.budget_usd, wall_s=args.wall_time,
                           iterations=args.iterations if args.iterations is not None else 20, patience=args.patience,
                           concurrency=args.concurrency, repair_tries=args.repair_tries, seed=args.seed, device=device,
                           size=args.size, base_url=args.base_url, **origin)
        t0 = time.monotonic()
        try:
            result = optimize_task(task_path, cfg, store=store, events=printer, resume=args.resume)
        except TaskError as exc:
            raise UserError(str(exc)) from exc
        except KeyboardInterrupt:
            printer.done()
            runs = store.list_runs(1)
            if runs and runs[0].status == "running":
                store.update_run(runs[0].id, status="cancelled")
                printer({"event": "done", "run_id": runs[0].id, "status": "cancelled"})
                print(f"stopped; resume with: kernelevo optimize --resume {runs[0].id} {args.target}", file=sys.stderr)
            return 130
        except Exception as exc:  # model errors carry a message meant for the user
            from kernelevo.llm import LLMError

            if isinstance(exc, LLMError):
                printer.done()
                print(f"kernelevo: error: {exc}", file=sys.stderr)
                return 1
            raise
        printer.done()
        summary = _summary(task_path, result, device, time.monotonic() - t0)
        summaries.append(summary)
        printer({"event": "done", "run_id": result.run_id, "status": result.status,
                 "best_speedup": summary["best_speedup_eager"], "best_speedup_compile": summary["best_speedup_compile"],
                 "tokens": summary["tokens"], "cost_usd": summary["cost_usd"]})
        if args.progress != "json":
            print(_format(summary))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(summaries if len(summaries) > 1 else summaries[0], indent=2))
    return 0


def _summary(task_path: Path, result: Any, device: str, elapsed: float) -> dict[str, Any]:
    best = result.best
    t = (best.verdict.get("timings") or {}) if best else {}
    return {"task": str(task_path), "run_id": result.run_id, "status": result.status, "device": device,
            "best_candidate": best.id if best else None, "best_backend": best.backend if best else None,
            "best_speedup_eager": t.get("speedup_eager"), "best_speedup_compile": t.get("speedup_compile"),
            "tokens": result.usage.get("tokens", 0), "cost_usd": result.usage.get("cost_usd", 0.0),
            "candidates": result.counts, "iterations": result.iterations, "stop_reason": result.stop_reason,
            "speed_measured": bool(t), "elapsed_s": round(elapsed, 1)}


def _format(s: dict[str, Any]) -> str:
    lines = [f"{Path(s['task']).name}: run {s['run_id']} · {s['status']} · {s['stop_reason']}"]
    if s["best_candidate"] is None:
        lines.append("  no verified candidate")
    elif not s["speed_measured"]:
        lines.append(f"  best: candidate {s['best_candidate']} ({s['best_backend']}) verified on the CPU; "
                     "speed not measured (no GPU), so nothing is proposed as faster")
    else:
        sc = s["best_speedup_compile"]
        lines.append(f"  best: candidate {s['best_candidate']} ({s['best_backend']}) "
                     f"{s['best_speedup_eager']:.2f}x vs eager" + (f", {sc:.2f}x vs torch.compile" if sc else ""))
    counts = ", ".join(f"{k} {v}" for k, v in sorted(s["candidates"].items())) or "none"
    lines.append(f"  candidates: {counts} · {s['tokens']:,} tokens · ${s['cost_usd']:.2f} · {s['elapsed_s']} s")
    return "\n".join(lines)
