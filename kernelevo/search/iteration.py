"""One model iteration of the search: a parent chosen from the next island, the prompt built
from it and its island's elites, the model's answer parsed and evaluated, and what fails
repaired up to `repair_tries` times.

Its attempts are phases `iteration` (index, attempt), so a resumed run reuses paid answers by
phase; the last attempt is marked final, which tells a resume that the iteration finished.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from kernelevo.phase import Phase
from kernelevo.search.parse import NoCode, extract_candidate
from kernelevo.search.population import Program
from kernelevo.verdict import Verdict

if TYPE_CHECKING:
    from kernelevo.search.loop import Search

REPAIRABLE = ("compile_error", "runtime_error", "incorrect", "rejected", "timeout")


def backend_for(search: Search, iteration: int) -> str:
    """The backend an iteration asks for: the configured one, or Triton and CUDA C++ in turn."""
    if search.cfg.backend != "auto":
        return search.cfg.backend
    return "triton" if search.cfg.device == "cpu" or iteration % 2 == 0 else "cuda"


async def run_iteration(search: Search, iteration: int) -> None:
    """One model iteration: a parent from the next island, the model's answer, and repairs of
    what fails up to `repair_tries` times; the last attempt is marked final."""
    rng = random.Random(f"{search.cfg.seed}:{iteration}")
    search.population.rng = rng
    backend = backend_for(search, iteration)
    search.population.maybe_migrate(iteration)
    island = search.population.island_for_next(iteration)
    parent, style = search.population.select_parent(island)
    if parent is not None and parent.backend not in (backend, "unknown"):
        parent = next(
            (
                p
                for p in search.population.elites(island) + search.population.elites()
                if p.backend == backend
            ),
            None,
        )
    insp = search.population.inspirations(parent, island)
    assert search.builder is not None and search.asker is not None
    history = search.population.attempts(parent)
    prompt = (
        search.builder.improve(backend, parent, insp, history, style)
        if parent
        else search.builder.fresh(backend, insp, history)
    )
    base = parent.source if parent else None
    program: Program | None = None
    for attempt in range(search.cfg.repair_tries + 1):
        phase = Phase.model(iteration, attempt)
        origin = "llm" if attempt == 0 else "repair"
        answer = await search.asker.ask(prompt, phase)
        search.calls_reused += answer.reused
        try:
            source, _how = extract_candidate(answer.text, base)
        except NoCode as exc:
            reason = str(exc)
            if answer.truncated and "cut off" not in reason:
                reason = (
                    "the answer was cut off at the token limit before its code block ended; "
                    + reason
                )
            search._progress(phase, origin, "no_code", None, None)
            if attempt == search.cfg.repair_tries:
                break
            prompt = search.builder.repair(
                backend,
                base or "",
                Verdict("compile_error", reason, backend=backend),
                search.population.attempts(parent),
            )
            continue
        program = await search._submit(source, phase, parent, origin, final=False)
        if program.status not in REPAIRABLE or attempt == search.cfg.repair_tries:
            break
        base = program.source
        prompt = search.builder.repair(
            backend, program.source, program.verdict, search.population.attempts(parent)
        )
    if program is not None:
        search._mark_final(program)
    else:
        search.store.add_candidate(
            search.run_id,
            phase=phase,
            origin="llm",
            backend=backend,
            source="",
            candidate_hash="",
            verdict=Verdict("compile_error", "no code in the answer").to_dict(),
            features={"final": True},
        )
    search.completed += 1
