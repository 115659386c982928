"""The parameter search after the model loop: tile sizes, warps and stages of the best verified
kernels (LLM-written or not), each configuration a candidate of phase `tune`.

A configuration is screened (one input set, then timed): most of a verdict's checks would be
spent on configurations that are never kept. The fastest screened ones are then verified in
full, fastest first, until one passes; only that one can be proposed.

Once one family's configurations all lie within the flat spread (offline/tune.py), a later family
starting within LIKE_FLAT of it is not tuned: both spend their time where launch parameters do not
reach (a library GEMM beside a small epilogue), and each configuration costs a GPU verdict.
A kernel at its roofline floor (search/headroom.py) is not tuned, and a tuning whose best
configuration reaches it stops."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kernelevo.phase import Phase
from kernelevo.search.headroom import Floor, family_floor
from kernelevo.search.population import Program
from kernelevo.verdict import Verdict

if TYPE_CHECKING:
    from kernelevo.search.loop import Search


LIKE_FLAT = 1.05  # a later family starting within this factor of a flat one is not tuned
# configurations of one family judged side by side: the next compiles ahead (or takes a second
# slot) while one is on the GPU, where one at a time left each compile and each verdict waiting
TUNE_WIDTH = 2
CONFIRM_TRIES = 2  # screened configurations verified in full, fastest first, until one passes


def refused_before_the_gpu(verdict: Verdict) -> bool:
    """Compiling ahead refused it (compile error, too much shared memory): no GPU time was spent."""
    return any(c.name == "compiled_ahead" and not c.passed for c in verdict.checks)


async def tune_best(search: Search) -> None:
    cfg = search.cfg
    if cfg.tune_evals <= 0 or cfg.tune_top <= 0:
        return
    if cfg.device != "cuda":
        search.notes.append("parameter search skipped: it needs measured times (no GPU)")
        return
    from kernelevo.offline.tune import FLAT_SPREAD, GIVE_UP_RATIO, REJECTED_AHEAD, tune

    loop = asyncio.get_running_loop()
    programs = search.population.programs
    parents = sorted(
        (p for p in programs.values() if p.verified and p.time_ms), key=lambda p: (p.time_ms, p.id)
    )
    flat: tuple[Program, float] | None = None  # the first flat family and its best time
    for k, parent in enumerate(parents[: cfg.tune_top]):
        if flat is not None and (parent.time_ms or 0.0) <= LIKE_FLAT * flat[1]:
            search.notes.append(
                f"candidate {parent.id} not tuned: it starts within {LIKE_FLAT - 1:.0%} of candidate "
                f"{flat[0].id}, whose configurations all lay within {FLAT_SPREAD:.0%} of each other "
                "(the time of both is where launch parameters do not reach)"
            )
            continue
        if why := search.budget.time_spent():
            search.notes.append(f"parameter search of candidate {parent.id} not started: {why}")
            break
        tuned = sum(p.parent_id == parent.id and p.origin == "tune" for p in programs.values())
        if tuned:  # tuned before a resume: its next attempt numbers follow the stored ones
            await confirm(search, parent, k, iter(range(tuned, tuned + 10_000)))
            continue
        attempts = iter(range(10_000))

        def evaluate(
            source: str, parent: Program = parent, k: int = k, attempts: Iterator[int] = attempts
        ) -> Any:
            fut = asyncio.run_coroutine_threadsafe(
                search._submit(
                    source,
                    Phase("tune", k, next(attempts)),
                    parent,
                    "tune",
                    final=True,
                    screen=True,
                ),
                loop,
            )
            prog = fut.result()
            if refused_before_the_gpu(prog.verdict):
                return REJECTED_AHEAD
            return prog.time_ms if prog.status in ("verified", "screened") else None

        t = parent.verdict.timings or {}
        baseline = min((x for x in (t.get("eager_ms"), t.get("compile_ms")) if x), default=None)
        if baseline and parent.time_ms and parent.time_ms > GIVE_UP_RATIO * baseline:
            search.notes.append(
                f"candidate {parent.id} not tuned: {parent.time_ms:.4g} ms is "
                f"{parent.time_ms / baseline:.1f}x the better baseline's {baseline:.4g} ms "
                "(launch parameters rarely close such a gap)"
            )
            continue
        floor = family_floor(parent.verdict) if cfg.stop_at_floor else None
        if floor is not None and floor.reached_by(parent.time_ms):
            search.notes.append(
                f"candidate {parent.id} not tuned: {floor.describe(parent.time_ms or 0.0)}; "
                "no launch parameter can gain more than the noise"
            )
            continue

        def at_floor(best_ms: float, floor: Floor | None = floor) -> str | None:
            if floor is None or not floor.reached_by(best_ms):
                return None
            return floor.describe(best_ms)

        result = await loop.run_in_executor(
            None,
            functools.partial(
                tune,
                parent.source,
                evaluate,
                budget_evals=max(1, cfg.tune_evals - 1),  # one left to verify the fastest in full
                seed=cfg.seed,
                baseline=baseline,
                eager=t.get("eager_ms"),
                stop=search.budget.time_spent,
                width=TUNE_WIDTH,
                at_floor=at_floor,
            ),
        )
        if result.note:
            search.notes.append(f"tuning candidate {parent.id}: {result.note}")
        await confirm(search, parent, k, attempts)
        if result.flat and flat is None:
            flat = (parent, result.best_time or parent.time_ms or 0.0)


async def confirm(search: Search, parent: Program, k: int, attempts: Iterator[int]) -> None:
    """The fastest screened configurations of `parent`'s family, faster than every verified one
    (the parent included), verified in full until one passes (at most CONFIRM_TRIES; one once
    the search's time is spent)."""
    family = [
        p
        for p in search.population.programs.values()
        if p.parent_id == parent.id and p.origin == "tune"
    ]
    verified = [p.time_ms for p in family if p.verified and p.time_ms]
    bar = min([*verified, *([parent.time_ms] if parent.time_ms else [])], default=None)
    screened = sorted(
        (
            p
            for p in family
            if p.status == "screened" and p.time_ms and (bar is None or p.time_ms < bar)
        ),
        key=lambda p: (p.time_ms, p.id),
    )
    for n, cand in enumerate(screened[:CONFIRM_TRIES]):
        if n and search.budget.time_spent():
            break
        prog = await search._submit(
            cand.source, Phase("tune", k, next(attempts)), parent, "tune", final=True
        )
        if prog.verified:
            return
        search.notes.append(
            f"tuning candidate {parent.id}: configuration {cand.id} ({cand.time_ms:.4g} ms) passed "
            f"the screening but not full verification ({prog.status}: {prog.verdict.reason[:160]})"
        )
