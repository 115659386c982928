"""The optimize job: from a task file to a stored, exported result.

Wires the parts together: the evaluator (workers), the proposer (a language model
or the offline search), the search loop and the store. The CLI and the benchmarks
call `optimize_task`.
"""
from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any, Callable

from kernelevo.evaluate import Evaluator
from kernelevo.machine import probe
from kernelevo.search.loop import Search, SearchConfig, SearchResult
from kernelevo.search.prompt import PromptBuilder, TaskContext
from kernelevo.store import ResultSummary, Store
from kernelevo.task import TaskFile, read_task

Events = Callable[[dict[str, Any]], None]


def has_api_key(provider: str | None = None) -> bool:
    try:
        from kernelevo.llm.config import load_config

        cfg = load_config()
        if cfg.provider and provider is None:
            provider = cfg.provider
    except Exception:
        cfg = None
    names = {"anthropic": ["ANTHROPIC_API_KEY"], "openai": ["OPENAI_API_KEY"]}
    wanted = names.get(provider or "", ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"])
    return any(os.environ.get(k) for k in wanted)


def default_provider() -> str:
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if os.environ.get("OPENAI_API_KEY"):
        return "openai"
    return "offline"


def hardware_description(device: str) -> str:
    m = probe()
    if device != "cuda" or not m.gpus:
        return ("no GPU on this machine: the kernel is checked in Triton's interpreter and compiled for sm_90 "
                "(H100/H200); write it for an NVIDIA Hopper GPU")
    return f"{m.gpus[0]} (driver {m.driver}, torch {m.torch}, triton {m.triton})"


def make_evaluate(task: TaskFile, evaluator: Evaluator, store: Store, size: str | None) -> Callable[[Path, int], Any]:
    from kernelevo.verify import verify_candidate

    def evaluate(path: Path, seed: int) -> Any:
        return verify_candidate(task, path, evaluator=evaluator, store=store, device=evaluator.device, size=size,
                                seed=seed)

    return evaluate


def offline_seeds(task: TaskFile, device: str, size: str | None) -> list[tuple[str, str]]:
    """Candidates the offline search proposes: template instances and the Inductor extraction."""
    seeds: list[tuple[str, str]] = []
    try:
        from kernelevo.offline import propose_offline
    except ImportError:
        return seeds
    return list(propose_offline(task.path, device=device, size=size or ("small" if device == "cpu" else "default")))


def optimize_task(task_path: str | Path, config: SearchConfig, *, store: Store, events: Events | None = None,
                  resume: str | None = None, provider: Any = None) -> SearchResult:
    task = read_task(task_path)
    if resume:
        run = store.get_run(resume)
        if run is None:
            raise ValueError(f"no run {resume!r} in {store.path}; `kernelevo runs` lists them")
        config = SearchConfig(**{k: v for k, v in run.config.items() if k in SearchConfig.__dataclass_fields__})
        resume = run.id
    if provider is None and config.provider != "offline":
        from kernelevo.llm import make_provider

        provider = make_provider(config.provider, config.model, base_url=config.base_url,
                                 max_concurrency=max(1, config.concurrency))
    builder = PromptBuilder(TaskContext(task_name=task.name, reference=task.source,
                                        hardware=hardware_description(config.device),
                                        baselines="not measured (no GPU)" if config.device == "cpu" else "measured per candidate",
                                        triton_version=probe().triton)) if provider is not None else None
    with Evaluator(config.device) as evaluator:
        seeds = offline_seeds(task, config.device, config.size) if not resume else []
        search = Search(task, config, store=store, evaluate=make_evaluate(task, evaluator, store, config.size),
                        provider=provider, builder=builder, seeds=seeds, events=events, run_id=resume)
        result = asyncio.run(search.run())
    _store_result(store, task, config, result)
    return result


def _store_result(store: Store, task: TaskFile, config: SearchConfig, result: SearchResult) -> None:
    best = result.best
    t = (best.verdict.get("timings") or {}) if best else {}
    r = (best.verdict.get("roofline") or {}) if best else {}
    candidate_path = ""
    if best is not None:
        out = store.path.parent / "runs" / result.run_id / "best.py"
        out.write_text(best.source)
        candidate_path = str(out)
    store.put_result(ResultSummary(
        run_id=result.run_id, source_file=config.source_file or str(task.path), target_id=config.target_id or "Model",
        status=result.status, backend=best.backend if best else "", gpu=(best.verdict.get("device") or {}).get("name", "")
        if best else "", created_at=time.time(), reference_ms=t.get("eager_ms"), compile_ms=t.get("compile_ms"),
        best_ms=t.get("candidate_ms"), speedup_eager=t.get("speedup_eager"), speedup_compile=t.get("speedup_compile"),
        achieved_gbps=r.get("achieved_gbps"), achieved_tflops=r.get("achieved_tflops"),
        roofline_fraction=r.get("bw_fraction") or r.get("flop_fraction"), tokens=int(result.usage.get("tokens", 0)),
        cost_usd=float(result.usage.get("cost_usd", 0.0)), verified=best is not None, candidate_path=candidate_path))
