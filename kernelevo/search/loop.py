"""The search loop: propose, evaluate, remember, repeat until the budget is spent.

Proposals (model calls) run concurrently; evaluations run on `eval_slots` threads
(one per GPU: only one candidate is timed on a GPU at a time). Everything
is written to the store as it happens, so `--resume` continues a killed run: paid
model answers are reused by their phase (iteration, attempt), evaluated
candidates come back from the store without running again.
"""
from __future__ import annotations

import asyncio
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from kernelevo.digest import text_hash
from kernelevo.llm import Budget, BudgetExhausted, LLMError, Prompt, Usage, request_hash
from kernelevo.search.parse import NoCode, extract_code
from kernelevo.search.phase import Phase
from kernelevo.search.population import Population, Program
from kernelevo.search.progress import ProgressEvent, describe_step
from kernelevo.search.prompt import PromptBuilder
from kernelevo.search.resume import RunLock
from kernelevo.store import Store
from kernelevo.task import TaskFile
from kernelevo.verdict import Verdict

Events = Callable[[dict[str, Any]], None]
REPAIRABLE = ("compile_error", "runtime_error")


@dataclass
class SearchConfig:
    backend: str = "auto"
    provider: str = "offline"
    model: str | None = None
    budget_tokens: int | None = None
    budget_usd: float | None = None
    wall_s: float | None = None
    iterations: int | None = 10
    patience: int | None = None
    concurrency: int = 2
    repair_tries: int = 3
    seed: int = 0
    n_islands: int = 2
    max_tokens: int = 8192
    device: str = "cpu"
    size: str | None = None
    base_url: str | None = None
    source_file: str = ""
    target_id: str = ""
    source_hash: str = ""
    offline_seeds: bool = True
    tune_evals: int = 12
    tune_top: int = 2

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SearchResult:
    run_id: str
    status: str
    best: Program | None
    counts: dict[str, int]
    usage: dict[str, Any]
    iterations: int
    stop_reason: str
    baselines: dict[str, Any] = field(default_factory=dict)


class Search:
    def __init__(self, task: TaskFile, config: SearchConfig, *, store: Store, evaluate: Callable[[Path, int], Verdict],
                 provider: Any = None, builder: PromptBuilder | None = None, seeds: list[tuple[str, str]] | None = None,
                 events: Events | None = None, run_id: str | None = None, workdir: Path | None = None,
                 eval_slots: int = 1) -> None:
        self.task, self.cfg, self.store = task, config, store
        self.evaluate_fn, self.provider, self.builder = evaluate, provider, builder
        self.seeds = seeds or []
        self.emit = events or (lambda e: None)
        self.population = Population(config.n_islands, seed=config.seed)
        self.budget = Budget(tokens=config.budget_tokens, usd=config.budget_usd, wall_s=config.wall_s)
        self.resuming = run_id is not None
        self.earlier_elapsed_s = 0.0
        self.run_id = run_id or store.create_run(task_path=str(task.path), task_hash=task.hash, config=config.to_dict(),
                                                 source_file=config.source_file, target_id=config.target_id,
                                                 source_hash=config.source_hash)
        self.dir = (workdir or store.path.parent) / "runs" / self.run_id
        self.dir.mkdir(parents=True, exist_ok=True)
        # two more threads than slots: the next candidates compile ahead while every GPU is busy
        self.gpu_pool = ThreadPoolExecutor(max_workers=max(1, eval_slots) + 2, thread_name_prefix="evaluate")
        self.next_iteration = 0
        self.unfinished: list[int] = []  # iterations a killed run left half done (their answers are paid)
        self.seeds_done = False
        self.best_fitness = -1.0
        self.last_improvement = 0
        self.completed = 0
        self.stop_reason = ""
        self.calls_reused = 0
        self.notes: list[str] = []

    # -- resume ----------------------------------------------------------------------
    def _restore(self) -> None:
        """Rebuild the population, spending and position from what the store holds."""
        rows = self.store.candidates(self.run_id)
        phases = {row["id"]: Phase.of_row(row) for row in rows}
        done = {phases[r["id"]].index for r in rows if phases[r["id"]].is_model and r["features"].get("final")}
        for row in rows:
            phase = phases[row["id"]]
            if not phase.is_model or phase.index in done:
                self._remember(row["id"], row["source"], row["backend"], row["verdict"], phase, row["parent_id"],
                               row["origin"])
            else:
                self.store.delete_candidate(row["id"])  # re-evaluated from its stored answer
        started: set[int] = set()
        for call in self.store.llm_calls(self.run_id):
            self.budget.charge(Usage(call["input_tokens"], call["output_tokens"], call["cache_read_tokens"],
                                     call["cache_write_tokens"], call["cost_usd"]))
            if call["phase_index"] is not None:
                started.add(int(call["phase_index"]))
        self.next_iteration = max(done | started) + 1 if done | started else 0
        self.unfinished = sorted(set(range(self.next_iteration)) - done)
        self.completed = len(done)
        run = self.store.get_run(self.run_id)
        summary = run.summary if run is not None else {}
        self.seeds_done = bool(summary.get("seeds_done"))
        self.earlier_elapsed_s = float(summary.get("elapsed_s") or 0.0)
        self.budget.wall_s = None if self.cfg.wall_s is None else max(self.cfg.wall_s - self.earlier_elapsed_s, 0.0)

    # -- model calls -------------------------------------------------------------------
    async def _ask(self, prompt: Prompt, phase: Phase) -> str:
        stored = self.store.find_llm_call(self.run_id, phase)
        if stored is not None:
            self.calls_reused += 1
            return stored["response_text"]
        completion = await self.provider.complete(prompt, max_tokens=self.cfg.max_tokens, budget=self.budget)
        self.store.add_llm_call(
            self.run_id, request_hash=request_hash(prompt, getattr(self.provider, "model", "")), phase=phase,
            provider=getattr(self.provider, "name", ""), model=completion.model,
            prompt={"system": [p.text for p in prompt.system], "messages": [[m.role, m.content] for m in prompt.messages]},
            response_text=completion.text, usage=completion.usage.to_dict())
        return completion.text

    # -- evaluation --------------------------------------------------------------------
    async def _evaluate(self, source: str, phase: Phase) -> dict[str, Any]:
        path = self.dir / f"cand_{phase.kind}_{phase.index:04d}_{phase.attempt}.py"
        path.write_text(source)
        seed = int(text_hash(f"{self.cfg.seed}:{text_hash(source)}")[:8], 16)
        loop = asyncio.get_running_loop()
        verdict = await loop.run_in_executor(self.gpu_pool, self.evaluate_fn, path, seed)
        return verdict.to_dict()

    def _remember(self, cid: int, source: str, backend: str, verdict: dict[str, Any], phase: Phase,
                  parent_id: int | None, origin: str) -> Program:
        iteration = phase.index if phase.is_model else -1
        parent = self.population.programs.get(parent_id) if parent_id is not None else None
        island = parent.island if phase.kind == "tune" and parent else phase.index % self.population.n_islands
        t = verdict.get("timings") or {}
        p = Program(id=cid, source=source, backend=backend, status=verdict.get("status", "?"),
                    speedup=t.get("speedup_eager"), time_ms=t.get("candidate_ms"), parent_id=parent_id,
                    island=island, iteration=iteration,
                    launches=int(verdict.get("kernel_launches") or 0) // max(1, _n_calls(verdict)),
                    origin=origin, verdict=verdict)
        self.population.add(p)
        if p.verified and p.fitness > self.best_fitness + 1e-9:
            self.best_fitness = p.fitness
            self.last_improvement = max(iteration, self.last_improvement)
        return p

    async def _submit(self, source: str, backend: str, phase: Phase, parent: Program | None,
                      origin: str, final: bool) -> Program:
        verdict = await self._evaluate(source, phase)
        t = verdict.get("timings") or {}
        cid = self.store.add_candidate(
            self.run_id, phase=phase, origin=origin, backend=verdict.get("backend", backend), source=source,
            candidate_hash=text_hash(source), verdict=verdict, parent_id=parent.id if parent else None,
            time_ms=t.get("candidate_ms"), speedup_eager=t.get("speedup_eager"),
            speedup_compile=t.get("speedup_compile"), features={"final": final})
        program = self._remember(cid, source, verdict.get("backend", backend), verdict, phase,
                                 parent.id if parent else None, origin)
        self._progress(phase, origin, program.status, program.speedup, cid)
        return program

    def _mark_final(self, program: Program) -> None:
        self.store.set_candidate_features(program.id, {"final": True})

    # -- one iteration -------------------------------------------------------------------
    def _backend_for(self, iteration: int) -> str:
        if self.cfg.backend != "auto":
            return self.cfg.backend
        return "triton" if self.cfg.device == "cpu" or iteration % 2 == 0 else "cuda"

    async def _iteration(self, iteration: int) -> None:
        rng = random.Random(f"{self.cfg.seed}:{iteration}")
        self.population.rng = rng
        backend = self._backend_for(iteration)
        self.population.maybe_migrate(iteration)
        island = self.population.island_for_next(iteration)
        parent = self.population.select_parent(island)
        if parent is not None and parent.backend not in (backend, "unknown"):
            parent = next((p for p in self.population.elites() if p.backend == backend), None)
        insp = self.population.inspirations(parent)
        assert self.builder is not None
        prompt = self.builder.improve(backend, parent, insp) if parent else self.builder.fresh(backend, insp)
        program: Program | None = None
        for attempt in range(self.cfg.repair_tries + 1):
            phase = Phase.model(iteration, attempt)
            answer = await self._ask(prompt, phase)
            try:
                source = extract_code(answer)
            except NoCode as exc:
                verdict = Verdict("compile_error", str(exc), backend=backend).to_dict()
                self._progress(phase, "llm" if attempt == 0 else "repair", "no_code", None, None)
                if attempt == self.cfg.repair_tries:
                    break
                prompt = self.builder.repair(backend, prompt, answer, "", verdict)
                continue
            last = attempt == self.cfg.repair_tries
            program = await self._submit(source, backend, phase, parent, "llm" if attempt == 0 else "repair",
                                         final=False)
            if program.status not in REPAIRABLE or last:
                break
            prompt = self.builder.repair(backend, prompt, answer, source, program.verdict)
        if program is not None:
            self._mark_final(program)
        else:
            self.store.add_candidate(self.run_id, phase=phase, origin="llm", backend=backend, source="",
                                     candidate_hash="", verdict={"status": "compile_error",
                                                                 "reason": "no code in the answer"},
                                     features={"final": True})
        self.completed += 1

    async def _worker(self) -> None:
        while True:
            reason = self._stop_reason()
            if reason:
                self.stop_reason = self.stop_reason or reason
                return
            if not self.unfinished and self.cfg.iterations is not None and self.next_iteration >= self.cfg.iterations:
                self.stop_reason = self.stop_reason or f"iteration budget spent: {self.cfg.iterations} iterations"
                return
            if self.unfinished:
                iteration = self.unfinished.pop(0)
            else:
                iteration = self.next_iteration
                self.next_iteration += 1
            try:
                await self._iteration(iteration)
            except BudgetExhausted as exc:
                self.stop_reason = self.stop_reason or str(exc)
                return

    def _stop_reason(self) -> str | None:
        reason = self.budget.exhausted()
        if reason:
            return reason
        if self.cfg.patience and self.completed - self.last_improvement > self.cfg.patience:
            return f"no improvement for {self.cfg.patience} iterations"
        return None

    def _progress(self, phase: Phase, origin: str, status: str, speedup: float | None,
                  candidate_id: int | None) -> None:
        best = self.population.best()
        snap = self.budget.snapshot()
        t = (best.verdict.get("timings") or {}) if best else {}
        total = {"seed": len(self.seeds), "tune": self.cfg.tune_evals}.get(phase.kind, self.cfg.iterations)
        index, message = describe_step(phase, total, origin, status, speedup, self.cfg.repair_tries)
        event = ProgressEvent(
            run_id=self.run_id, phase=phase.kind, index=index, total=total, origin=origin, status=status,
            speedup=speedup, message=message, attempt=phase.attempt, candidate_id=candidate_id,
            iteration=self.completed, evaluated=len(self.population.programs),
            best_speedup=best.speedup if best else None, best_speedup_compile=t.get("speedup_compile"),
            verified=best is not None, tokens=snap["tokens"], cost_usd=snap["cost_usd"])
        self.emit(event.to_dict())
        self.store.update_run(self.run_id, summary=self._state())

    def _state(self) -> dict[str, Any]:
        """What a resume needs besides the candidates and calls: whether the seeds are done, and
        the wall time spent so far (the time budget does not restart)."""
        return {"seeds_done": self.seeds_done, "elapsed_s": round(self.earlier_elapsed_s + self.budget.elapsed_s, 3)}

    # -- the run -------------------------------------------------------------------------
    async def run(self) -> SearchResult:
        lock = RunLock(self.dir, self.run_id).acquire()
        try:
            return await self._run()
        finally:
            lock.release()

    async def _run(self) -> SearchResult:
        self.store.update_run(self.run_id, status="running")
        if self.resuming:
            self._restore()
        self.emit({"event": "start", "run_id": self.run_id, "task": str(self.task.path), "provider": self.cfg.provider,
                   "backend": self.cfg.backend, "resumed": self.resuming})
        try:
            for k, (origin, source) in enumerate(self.seeds):
                if any(p.origin == origin and p.source == source for p in self.population.programs.values()):
                    continue
                await self._submit(source, "triton", Phase("seed", k), None, origin, final=True)
            self.seeds_done = True
            if self.provider is not None and self.builder is not None:
                workers = [asyncio.create_task(self._worker()) for _ in range(max(1, self.cfg.concurrency))]
                await asyncio.gather(*workers)
            else:
                self.stop_reason = "offline search finished"
            await self._tune_best()
        except LLMError as exc:
            self.stop_reason = f"model error: {exc}"
            self.store.update_run(self.run_id, status="failed", summary=self._summary("failed"))
            self.emit({"event": "error", "run_id": self.run_id, "message": str(exc)})
            raise
        finally:
            self.gpu_pool.shutdown(wait=True)
            if self.provider is not None and hasattr(self.provider, "aclose"):
                await self.provider.aclose()
        best = self.population.best()
        status = "improved" if best is not None and _beats_baselines(best) else "no_improvement"
        summary = self._summary(status)
        self.store.update_run(self.run_id, status="done", summary=summary)
        return SearchResult(self.run_id, status, best, self.population.counts(), self.budget.snapshot(),
                            self.completed, self.stop_reason)

    async def _tune_best(self) -> None:
        """Parameter search (tiles, warps, stages) over the best verified kernels, LLM-written or not."""
        if self.cfg.tune_evals <= 0 or self.cfg.tune_top <= 0:
            return
        if self.cfg.device != "cuda":
            self.notes.append("parameter search skipped: it needs measured times (no GPU)")
            return
        from kernelevo.offline.tune import REJECTED_AHEAD, tune

        loop = asyncio.get_running_loop()
        parents = sorted((p for p in self.population.programs.values() if p.verified and p.time_ms),
                         key=lambda p: (p.time_ms, p.id))[: self.cfg.tune_top]
        for k, parent in enumerate(parents):
            if any(p.parent_id == parent.id and p.origin == "tune" for p in self.population.programs.values()):
                continue  # tuned before a resume
            attempts = iter(range(10_000))

            def evaluate(source: str, parent: Program = parent, k: int = k) -> Any:
                fut = asyncio.run_coroutine_threadsafe(
                    self._submit(source, parent.backend, Phase("tune", k, next(attempts)), parent, "tune", final=True),
                    loop)
                prog = fut.result()
                if _refused_before_the_gpu(prog.verdict):
                    return REJECTED_AHEAD
                return prog.time_ms if prog.verified else None

            t = parent.verdict.get("timings") or {}
            baseline = min((x for x in (t.get("eager_ms"), t.get("compile_ms")) if x), default=None)
            result = await loop.run_in_executor(None, lambda: tune(parent.source, evaluate, budget_evals=self.cfg.tune_evals,
                                                                   seed=self.cfg.seed, baseline=baseline))
            if result.note:
                self.notes.append(f"tuning candidate {parent.id}: {result.note}")

    def _summary(self, status: str) -> dict[str, Any]:
        best = self.population.best()
        t = (best.verdict.get("timings") or {}) if best else {}
        return {**_apply_meta(best, self.cfg, self.run_id),"status": status, "best_candidate": best.id if best else None, "backend": best.backend if best else "",
                "speedup_eager": t.get("speedup_eager"), "speedup_compile": t.get("speedup_compile"),
                "usage": self.budget.snapshot(), "counts": self.population.counts(), "stop_reason": self.stop_reason,
                "iterations": self.completed, "calls_reused": self.calls_reused, "notes": self.notes,
                **self._state()}


def _refused_before_the_gpu(verdict: dict[str, Any]) -> bool:
    """Compiling ahead refused it (compile error, too much shared memory): no GPU time was spent."""
    return any(c.get("name") == "compiled_ahead" and not c.get("passed") for c in verdict.get("checks") or [])


def _apply_meta(best: Program | None, cfg: SearchConfig, run_id: str) -> dict[str, Any]:
    """What `kernelevo apply` needs to guard the kernel: the inputs it was verified on, and where."""
    if best is None:
        return {}
    v = best.verdict
    inputs = v.get("inputs") or []
    tensors = [a for row in inputs for a in row if a.get("kind") == "tensor"]
    t = v.get("timings") or {}
    return {"verified": True, "run_id": run_id, "backend": "cuda" if best.backend.startswith("cuda") else best.backend,
            "gpu": (v.get("device") or {}).get("name", ""), "date": time.strftime("%Y-%m-%d"),
            "inputs": inputs, "dtypes": sorted({a["dtype"] for a in tensors}),
            "devices": sorted({a["device"] for a in tensors}),
            "shapes": [[a["shape"] for a in row if a.get("kind") == "tensor"] for row in inputs],
            "speedups": {"eager": t.get("speedup_eager"), "compile": t.get("speedup_compile")},
            "source_hash": cfg.source_hash, "target_id": cfg.target_id, "source_file": cfg.source_file}


def _n_calls(verdict: dict[str, Any]) -> int:
    """Forward calls made during verification (to turn total launches into launches per call)."""
    return max(1, sum(1 for c in verdict.get("checks", []) if str(c.get("name", "")).startswith(("match[", "same_buffers"))))


def _beats_baselines(best: Program) -> bool:
    """Improved only when measured faster than both eager and torch.compile beyond the timing noise;
    unmeasured is not improved."""
    from kernelevo.timing_stats import clearly_faster

    return clearly_faster(best.verdict.get("timings") or {})[0]
