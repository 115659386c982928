"""The optimize job: from a task file to a stored, exported result.

Wires the parts together: the dispatcher (worker processes on every GPU, or Ray actors),
the proposer (a language model or the offline search), the search loop and the store.
The CLI and the benchmarks call `optimize_task`, or `optimize_many` for many targets
sharing the GPUs and one budget.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernelevo.dispatch import Dispatcher
from kernelevo.llm import Budget, Usage
from kernelevo.llm.budget import Reservation
from kernelevo.measure.machine import probe
from kernelevo.search.events import Events, SearchEvent, Status
from kernelevo.search.loop import Search, SearchConfig, SearchResult
from kernelevo.search.prompt import PromptBuilder, TaskContext, allows_tf32
from kernelevo.search.resume import check_task
from kernelevo.search.stored_result import store_result
from kernelevo.store import Store
from kernelevo.task import TaskError, TaskFile, read_task


def default_provider() -> str:
    """The config file's provider, else the first of anthropic and openai with a key (from the
    environment or the config file), else the offline search."""
    from kernelevo.llm import AuthError, load_config
    from kernelevo.llm.provider_config import resolve_endpoint

    config = load_config()
    if config.provider:
        return config.provider
    for name in ("anthropic", "openai"):
        try:
            resolve_endpoint(name, config=config)
            return name
        except AuthError:
            continue
    return "offline"


def hardware_description(device: str, gpu_name: str | None = None) -> str:
    m = probe()
    if device != "cuda" or not (gpu_name or m.gpus):
        return (
            "no GPU on this machine: the kernel is checked in Triton's interpreter and compiled for sm_90 "
            "(H100/H200); write it for an NVIDIA Hopper GPU"
        )
    return f"{gpu_name or m.gpus[0]} (driver {m.driver}, torch {m.torch}, triton {m.triton})"


def offline_seeds(
    task: TaskFile,
    device: str,
    size: str | None,
    log: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[tuple[str, str]]:
    """Candidates the offline search proposes: template instances and the Inductor extraction;
    why a source proposed nothing goes to `log`."""
    seeds: list[tuple[str, str]] = []
    try:
        from kernelevo.offline import propose_offline
    except ImportError:
        return seeds
    from kernelevo.verify import resolve_size

    try:
        return list(
            propose_offline(
                task.path,
                device=device,
                size=resolve_size(task, device, size),  # the shapes its verdicts will use
                log=log,
                progress=progress,
            )
        )
    except TaskError:  # the task fails on its own: the user's to fix, said in one line
        raise
    except Exception as exc:  # seeds are a bonus: a reference the offline search cannot read is a reason, not a crash
        if log is not None:
            log(
                f"offline: no candidates: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
            )
        return seeds


def _search(
    task: TaskFile,
    config: SearchConfig,
    *,
    store: Store,
    dispatcher: Dispatcher,
    events: Events | None,
    resume: str | None,
    provider: Any,
) -> Search:
    if provider is None and config.provider != "offline":
        provider = _provider(config)
    gpu_name = dispatcher.pool.pinned_model(task.hash) if config.device == "cuda" else None
    builder = (
        PromptBuilder(
            TaskContext(
                task_name=task.name,
                reference=task.source,
                hardware=hardware_description(config.device, gpu_name),
                baselines="not measured (no GPU here)"
                if config.device == "cpu"
                else "measured on the first candidate",
                triton_version=probe().triton,
                tolerance=task.hints.get("TOLERANCE") or {},
                allow_tf32=allows_tf32(task.source),
                allowed_ops=list(task.hints.get("ALLOWED_LIBRARY_OPS") or []),
                tolerance_note=_tolerance_note(task.hints.get("TOLERANCE")),
            )
        )
        if provider is not None
        else None
    )
    run = store.get_run(resume) if resume else None
    seeds_done = run is not None and bool(
        run.summary.get("seeds_done")
    )  # a resume finishes an unfinished seed phase
    seed_notes: list[str] = []

    def status(message: str) -> None:  # the offline phase can take minutes on a CPU: say so
        if events is not None:
            events(Status(message))

    proposing, t0 = config.offline_seeds and not seeds_done, time.monotonic()
    seeds = (
        offline_seeds(task, config.device, config.size, seed_notes.append, status)
        if proposing
        else []
    )
    proposing_s = round(time.monotonic() - t0, 2)
    if seeds:
        status(f"verifying {len(seeds)} offline candidate(s)...")
    search = Search(
        task,
        config,
        store=store,
        evaluate=functools.partial(dispatcher.evaluate, task, size=config.size),
        provider=provider,
        builder=builder,
        seeds=seeds,
        events=events,
        run_id=resume,
        eval_slots=dispatcher.capacity_for(task),
        compile_ahead=getattr(dispatcher, "compile_width", 2),
    )
    search.notes.extend(seed_notes)
    if proposing:
        search.phase_s["offline_proposals"] = proposing_s
    search.throughput.verdicts.extend(getattr(dispatcher, "verdict_times", list)())
    return search


def _provider(config: SearchConfig) -> Any:
    """The model client for a search: its settings (max_tokens, thinking, effort) from the config
    file's [models."<model>"], overridden by the search's; a dollar budget refused for an unpriced model."""
    from kernelevo.llm import load_config, make_provider, settings_for
    from kernelevo.llm.prices import check_priced
    from kernelevo.llm.provider_config import config_path

    llm_config = load_config()
    provider = make_provider(
        config.provider,
        config.model,
        base_url=config.base_url,
        config=llm_config,
        max_concurrency=max(1, config.concurrency or config.max_in_flight),
    )
    if hasattr(provider, "settings"):
        provider.settings = settings_for(
            provider.model,
            llm_config.models,
            max_tokens=config.max_tokens,
            thinking_tokens=config.thinking_tokens,
            effort=config.effort,
        )
    check_priced(provider, config.budget_usd, str(llm_config.path or config_path()))
    return provider


def _tolerance_note(hint: Any) -> str:
    return f"This task sets its own tolerance: {hint}." if hint else ""


def optimize_task(
    task_path: str | Path,
    config: SearchConfig,
    *,
    store: Store,
    events: Events | None = None,
    resume: str | None = None,
    provider: Any = None,
    dispatcher: Dispatcher | None = None,
) -> SearchResult:
    """One search. Without `dispatcher`, a local one is opened for it (every visible GPU, or
    one CPU worker) and closed at the end."""
    task = read_task(task_path)
    if resume:
        run = store.get_run(resume)
        if run is None:
            raise ValueError(f"no run {resume!r} in {store.path}; `kernelevo runs` lists them")
        check_task(run.id, run.task_hash, task.hash, str(task.path))
        config = SearchConfig(
            **{k: v for k, v in run.config.items() if k in SearchConfig.__dataclass_fields__}
        )
        resume = run.id
    own = dispatcher is None
    if dispatcher is None:
        from kernelevo.dispatch.local import LocalDispatcher

        dispatcher = LocalDispatcher(config.device, store=store)
    try:
        search = _search(
            task,
            config,
            store=store,
            dispatcher=dispatcher,
            events=events,
            resume=resume,
            provider=provider,
        )
        result = asyncio.run(search.run())
    finally:
        if own:
            dispatcher.close()
    store_result(store, task, config, result)
    return result


class BudgetShare(Budget):
    """One search's part of a shared budget: every reservation and charge goes to the shared
    budget (which decides), while `snapshot` reports what this search spent."""

    def __init__(self, shared: Budget) -> None:
        super().__init__()
        self.shared = shared

    def reserve(self, tokens: int, usd: float = 0.0) -> Reservation:
        r = self.shared.reserve(tokens, usd)
        with self._lock:
            self._open[r.id] = r
        return r

    def charge(self, usage: Usage, reservation: Reservation | None = None) -> None:
        self.shared.charge(usage, reservation)
        with self._lock:
            if reservation is not None:
                self._open.pop(reservation.id, None)
            self.used = self.used + usage

    def release(self, reservation: Reservation) -> None:
        self.shared.release(reservation)
        with self._lock:
            self._open.pop(reservation.id, None)

    def exhausted(self) -> str | None:
        return self.shared.exhausted()

    def time_spent(self) -> str | None:
        return self.shared.time_spent()


@dataclass
class TargetOutcome:
    """One target of `optimize_many`: its search's result, or why it has none."""

    task_path: Path
    origin: dict[str, str]
    result: SearchResult | None = None
    error: str | None = None
    elapsed_s: float = 0.0


def optimize_many(
    targets: list[tuple[Path, dict[str, str]]],
    config: SearchConfig,
    *,
    store: Store,
    dispatcher: Dispatcher,
    events: Events | None = None,
    parallel: int | None = None,
    provider_factory: Callable[[], Any] | None = None,
) -> list[TargetOutcome]:
    """Searches for many targets at once, sharing the dispatcher's GPUs and one budget.

    Tokens, dollars and wall time are spent from one Budget (a later target gets what the
    earlier ones left); iterations are per target. `parallel` searches run at once (default:
    as many as there are slots, at least 2); the others wait their turn."""
    budget = Budget(tokens=config.budget_tokens, usd=config.budget_usd, wall_s=config.wall_s)
    outcomes = [TargetOutcome(Path(p), dict(origin)) for p, origin in targets]
    emit = events or (lambda e: None)

    async def one(out: TargetOutcome, gate: asyncio.Semaphore) -> None:
        async with gate:
            t0 = time.monotonic()
            try:
                task = read_task(out.task_path)
                cfg = replace(
                    config,
                    source_file=out.origin.get("source_file", config.source_file),
                    target_id=out.origin.get("target_id", config.target_id),
                    source_hash=out.origin.get("source_hash", config.source_hash),
                )
                # off the event loop: the offline proposer may take seconds (it compiles), other searches go on
                search = await asyncio.to_thread(
                    _search,
                    task,
                    cfg,
                    store=store,
                    dispatcher=dispatcher,
                    events=functools.partial(_named, emit, task.name),
                    resume=None,
                    provider=provider_factory() if provider_factory else None,
                )
                search.budget = BudgetShare(budget)
                out.result = await search.run()
                store_result(store, task, cfg, out.result)
            except TaskError as exc:
                out.error = str(exc)
            except Exception as exc:  # one failed target must not stop the others
                out.error = f"{type(exc).__name__}: {exc}"
            out.elapsed_s = time.monotonic() - t0

    async def main() -> None:
        gate = asyncio.Semaphore(max(1, parallel or max(2, dispatcher.capacity)))
        await asyncio.gather(*(one(o, gate) for o in outcomes))

    asyncio.run(main())
    return outcomes


def _named(emit: Events, name: str, event: SearchEvent) -> None:
    """A search's event, said of its task (several searches share one event stream)."""
    emit(event.of_task(name))
