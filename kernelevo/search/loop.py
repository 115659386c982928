"""The search loop: propose, evaluate, remember, repeat until the budget is spent.

Proposals (model calls) run concurrently; evaluations run on `eval_slots` threads
(one per GPU: only one candidate is timed on a GPU at a time). Everything
is written to the store as it happens, so `--resume` continues a killed run: paid
model answers are reused by their phase (iteration, attempt), evaluated
candidates come back from the store without running again.
"""

from __future__ import annotations

import asyncio
import functools
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from kernelevo.digest import text_hash
from kernelevo.llm import AuthError, Budget, BudgetExhausted, LLMError, ModelNotFound
from kernelevo.outcome import judge
from kernelevo.phase import Phase
from kernelevo.search.asking import Asker
from kernelevo.search.config import SearchConfig, SearchResult
from kernelevo.search.events import Events, SearchFailed, Started
from kernelevo.search.headroom import AT_FLOOR, memory_floor
from kernelevo.search.iteration import run_iteration
from kernelevo.search.population import Population, Program
from kernelevo.search.progress import progress_event, resume_state, run_summary
from kernelevo.search.prompt import PromptBuilder
from kernelevo.search.resume import RunLock, restore
from kernelevo.search.throughput import Throughput
from kernelevo.store import Store
from kernelevo.task import TaskFile
from kernelevo.verdict import Verdict

MAX_MODEL_ERRORS_IN_A_ROW = 3


class Judge(Protocol):
    """How a search has a candidate file judged: a dispatcher's `evaluate` bound to the task."""

    def __call__(self, path: Path, seed: int, *, screen: bool = False) -> Verdict: ...


class Search:
    def __init__(
        self,
        task: TaskFile,
        config: SearchConfig,
        *,
        store: Store,
        evaluate: Judge,
        provider: Any = None,
        builder: PromptBuilder | None = None,
        seeds: list[tuple[str, str]] | None = None,
        events: Events | None = None,
        run_id: str | None = None,
        workdir: Path | None = None,
        eval_slots: int = 1,
        compile_ahead: int = 2,
    ) -> None:
        self.task, self.cfg, self.store = task, config, store
        self.evaluate_fn, self.provider, self.builder = evaluate, provider, builder
        self.seeds = seeds or []
        self.emit = events or (lambda e: None)
        self.population = Population(config.n_islands, seed=config.seed)
        self.budget = Budget(
            tokens=config.budget_tokens, usd=config.budget_usd, wall_s=config.wall_s
        )
        self.resuming = run_id is not None
        self.earlier_elapsed_s = 0.0
        self.run_id = run_id or store.create_run(
            task_path=str(task.path),
            task_hash=task.hash,
            config=config.to_dict(),
            source_file=config.source_file,
            target_id=config.target_id,
            source_hash=config.source_hash,
        )
        self.dir = (workdir or store.path.parent) / "runs" / self.run_id
        self.dir.mkdir(parents=True, exist_ok=True)
        # a thread per slot and per compile worker: the next candidates compile ahead while
        # every GPU is busy (fewer threads than compilers leave a burst of replies waiting)
        self.gpu_pool = ThreadPoolExecutor(
            max_workers=max(1, eval_slots) + max(1, compile_ahead), thread_name_prefix="evaluate"
        )
        self.next_iteration = 0
        self.unfinished: list[int] = []  # iterations a killed run left half done (answers paid)
        self.seeds_done = False
        self.phase_s: dict[str, float] = {}  # wall seconds per phase: where a search's time went
        self.best_fitness = -1.0
        self.last_improvement = 0
        self.completed = 0
        self.stop_reason = ""
        self.calls_reused = 0
        self.notes: list[str] = []
        self.model_errors: list[str] = []
        self.errors_in_a_row = 0
        self.throughput = Throughput(
            slots=max(1, eval_slots),
            highest=max(1, config.max_in_flight),
            fixed=config.concurrency,
            device=config.device,
            iterations=config.iterations,
        )
        self.asker = (
            Asker(provider, store, self.run_id, self.budget, self.throughput)
            if provider is not None
            else None
        )

    # -- evaluation --------------------------------------------------------------------
    async def _evaluate(self, source: str, phase: Phase, screen: bool = False) -> Verdict:
        path = self.dir / f"cand_{phase.kind}_{phase.index:04d}_{phase.attempt}.py"
        path.write_text(source)
        seed = int(text_hash(f"{self.cfg.seed}:{text_hash(source)}")[:8], 16)
        loop = asyncio.get_running_loop()
        judge = (
            functools.partial(self.evaluate_fn, screen=True) if screen else self.evaluate_fn
        )  # a parameter-search configuration: one input set, then timed
        verdict: Verdict = await loop.run_in_executor(self.gpu_pool, judge, path, seed)
        # the time it held its slot (not the wait for one, which says nothing of the verdict),
        # less what only a task's first verdict pays
        await self.throughput.saw_verdict(verdict.steady_s)
        if self.builder is not None:
            self.builder.learn(verdict)
        return verdict

    def _remember(
        self,
        cid: int,
        source: str,
        backend: str,
        verdict: Verdict,
        phase: Phase,
        parent_id: int | None,
        origin: str,
    ) -> Program:
        iteration = phase.index if phase.is_model else -1
        parent = self.population.programs.get(parent_id) if parent_id is not None else None
        island = (
            parent.island
            if phase.kind == "tune" and parent
            else phase.index % self.population.n_islands
        )
        p = Program.judged(
            cid,
            source,
            backend,
            verdict,
            parent_id=parent_id,
            island=island,
            iteration=iteration,
            origin=origin,
        )
        self.population.add(p)
        if p.verified and p.fitness > self.best_fitness + 1e-9:
            self.best_fitness = p.fitness
            self.last_improvement = max(iteration, self.last_improvement)
        return p

    async def _submit(
        self,
        source: str,
        phase: Phase,
        parent: Program | None,
        origin: str,
        final: bool,
        screen: bool = False,
    ) -> Program:
        """Judge, store and keep one candidate; its backend is the one its verdict read from the
        source. `screen`: judged as a parameter-search configuration (verify/__init__.py)."""
        verdict = await self._evaluate(source, phase, screen)
        t = verdict.timings or {}
        cid = self.store.add_candidate(
            self.run_id,
            phase=phase,
            origin=origin,
            backend=verdict.backend,
            source=source,
            candidate_hash=text_hash(source),
            verdict=verdict.to_dict(),
            parent_id=parent.id if parent else None,
            time_ms=t.get("candidate_ms"),
            speedup_eager=t.get("speedup_eager"),
            speedup_compile=t.get("speedup_compile"),
            features={"final": final},
        )
        program = self._remember(
            cid,
            source,
            verdict.backend,
            verdict,
            phase,
            parent.id if parent else None,
            origin,
        )
        self._progress(phase, origin, program.status, program.speedup, cid)
        return program

    def _mark_final(self, program: Program) -> None:
        self.store.set_candidate_features(program.id, {"final": True})

    async def _worker(self) -> None:
        while True:
            await self.throughput.admit()
            try:
                if not self._next_iteration():
                    return
                iteration = self.unfinished.pop(0) if self.unfinished else self._take()
                try:
                    await run_iteration(self, iteration)
                    self.errors_in_a_row = 0
                except BudgetExhausted as exc:
                    self.stop_reason = self.stop_reason or str(exc)
                    return
                except (AuthError, ModelNotFound):
                    raise  # a wrong key or model fails every call: say so at once
                except LLMError as exc:  # this iteration is lost, the run goes on
                    self._model_error(iteration, exc)
            finally:
                await self.throughput.done()

    def _take(self) -> int:
        iteration = self.next_iteration
        self.next_iteration += 1
        return iteration

    def _next_iteration(self) -> bool:
        """Whether another iteration may start (else the stop reason is set)."""
        reason = self._stop_reason()
        if reason:
            self.stop_reason = self.stop_reason or reason
            return False
        if (
            not self.unfinished
            and self.cfg.iterations is not None
            and self.next_iteration >= self.cfg.iterations
        ):
            self.stop_reason = (
                self.stop_reason or f"iteration budget spent: {self.cfg.iterations} iterations"
            )
            return False
        return True

    def _model_error(self, iteration: int, exc: LLMError) -> None:
        self.completed += 1
        self.errors_in_a_row += 1
        self.model_errors.append(f"iteration {iteration + 1}: {exc}")
        self._progress(Phase.model(iteration, 0), "llm", "model_error", None, None, str(exc))
        if self.errors_in_a_row >= MAX_MODEL_ERRORS_IN_A_ROW:
            self.stop_reason = (
                self.stop_reason
                or f"{self.errors_in_a_row} model calls failed in a row, the last: {exc}"
            )

    def _stop_reason(self) -> str | None:
        if self.stop_reason:
            return self.stop_reason
        reason = self.budget.exhausted()
        if reason:
            return reason
        if self.cfg.patience and self.completed - self.last_improvement > self.cfg.patience:
            return f"no improvement for {self.cfg.patience} iterations"
        best = self.population.best() if self.cfg.stop_at_floor else None
        floor = memory_floor(best.verdict) if best is not None else None
        if best is not None and floor is not None and floor.reached_by(best.time_ms):
            return (
                f"candidate {best.id} {floor.describe(best.time_ms or 0.0)}: a new kernel could "
                f"gain at most {1 - AT_FLOOR:.0%}"
            )
        return None

    def _progress(
        self,
        phase: Phase,
        origin: str,
        status: str,
        speedup: float | None,
        candidate_id: int | None,
        detail: str = "",
    ) -> None:
        self.emit(progress_event(self, phase, origin, status, speedup, candidate_id, detail))
        self.store.update_run(self.run_id, summary=resume_state(self))

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
            restore(self)
        self.emit(
            Started(
                self.run_id,
                task=str(self.task.path),
                provider=self.cfg.provider,
                backend=self.cfg.backend,
                resumed=self.resuming,
            )
        )
        t = time.monotonic()
        try:
            await self._judge_seeds()
            self.seeds_done = True
            t = self._spent("seeds", t)
            if self.provider is not None and self.builder is not None:
                n = self.cfg.concurrency or self.cfg.max_in_flight
                workers = [asyncio.create_task(self._worker()) for _ in range(max(1, n))]
                await asyncio.gather(*workers)
                t = self._spent("model", t)
            else:
                self.stop_reason = "offline search finished"
            await self._tune_best()
            self._spent("tune", t)
        except LLMError as exc:
            self.stop_reason = f"model error: {exc}"
            self.store.update_run(self.run_id, status="failed", summary=run_summary(self, "failed"))
            self.emit(SearchFailed(str(exc), run_id=self.run_id))
            raise
        finally:
            self.gpu_pool.shutdown(wait=True)
            if self.provider is not None and hasattr(self.provider, "aclose"):
                await self.provider.aclose()
        best = self.population.best()
        outcome = judge(
            (best.verdict.timings or {}) if best else None,
            verified=best is not None,
            device=self.cfg.device,
            counts=self.population.counts(),
        )
        status = outcome.kind.value
        summary = {**run_summary(self, status), "outcome": outcome.to_dict()}
        self.store.update_run(self.run_id, status="done", summary=summary)
        return SearchResult(
            self.run_id,
            status,
            best,
            self.population.counts(),
            self.budget.snapshot(),
            self.completed,
            self.stop_reason,
            outcome=outcome,
        )

    async def _judge_seeds(self) -> None:
        """The seeds not judged yet (a resume skips the rest), as many side by side as the search
        has evaluation slots, in their order: each slot holds one while another is judged."""
        slots = asyncio.Semaphore(self.throughput.slots)

        async def judge(k: int, origin: str, source: str) -> None:
            async with slots:
                await self._submit(source, Phase("seed", k), None, origin, final=True)

        await asyncio.gather(
            *(
                judge(k, origin, source)
                for k, (origin, source) in enumerate(self.seeds)
                if not any(
                    p.origin == origin and p.source == source
                    for p in self.population.programs.values()
                )
            )
        )

    def _spent(self, phase: str, since: float) -> float:
        now = time.monotonic()
        self.phase_s[phase] = round(self.phase_s.get(phase, 0.0) + now - since, 2)
        return now

    async def _tune_best(self) -> None:
        from kernelevo.search.tuning import tune_best

        await tune_best(self)
