"""Parameter search over a candidate's launch and tile parameters, budgeted by evaluations.

A small evolutionary search: start from the source's own values, mutate the best few
(one or two parameters, mostly to a neighbouring power of two), never evaluate a
configuration twice, enumerate outright when the space fits in the budget; configurations a
compiler listed for a kernel without picking one (listed_configs.py) go first. `evaluate`
must verify correctness as well as time: a configuration it rejects (None) is skipped,
which is how invalid tiles (a row that no longer fits one block) drop out. The best
configuration is written into the source as literals, so the result needs no
autotuning at run time. Deterministic for a seed (given a deterministic `evaluate`).
`evaluate` returns REJECTED_AHEAD for a configuration refused before it reached a GPU
(a compile error, tiles beyond the shared memory): those cost no evaluation, up to a cap.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from kernelevo.offline.hw_model import prior
from kernelevo.offline.listed_configs import listed_trials
from kernelevo.offline.tunables import Tunable, apply_config, autotune_variants, find_tunables

__all__ = ["REJECTED_AHEAD", "Trial", "TuneResult", "find_tunables", "tune"]


class RejectedAhead:
    """The type of REJECTED_AHEAD."""

    def __repr__(self) -> str:
        return "REJECTED_AHEAD"


REJECTED_AHEAD = RejectedAhead()
FREE_REJECTS_PER_EVAL = 2  # at most this many refusals before the GPU per evaluation of the budget
GIVE_UP_RATIO = (
    1.5  # a family this much slower than the baseline after PROBE_EVALS timings is dropped
)
PROBE_EVALS = 3
SLOWER_THAN_EAGER_SHARE = 0.34  # the most of the budget a family slower than eager may spend
PRUNE_RATIO = 1.25  # a configuration this much slower than the baseline breeds no mutants
PRIOR_EVALS = 6  # evaluations whose mutants are ranked by the hardware model (hw_model.prior)
FLAT_EVALS = 4  # after this many timed configurations, a family whose times all lie
FLAT_SPREAD = 0.01  # within this fraction of its best is not in its launch parameters: stop


@dataclass
class Trial:
    config: dict[str, int]  # tunable name -> value; {"autotune": i} for a stripped autotune config
    time: float | None  # None: rejected by evaluate
    label: str = ""


@dataclass
class TuneResult:
    best_source: str
    best_time: float | None  # None: no configuration passed evaluate
    history: list[Trial] = field(default_factory=list)
    best_config: dict[str, int] = field(default_factory=dict)
    note: str = ""
    flat: bool = False  # stopped by the flat-family rule: its time is not in its launch parameters


def _stopped(note: str, evaluations: int, why: str) -> str:
    """The tuning's note with why it stopped early appended."""
    return (f"{note}; " if note else "") + f"stopped after {evaluations} evaluations: {why}"


def _flat(trials: list[Trial], names: list[str]) -> bool:
    """FLAT_EVALS timed configurations or more, every tunable moved in them, and all their times
    within FLAT_SPREAD of the best."""
    times = [t.time for t in trials if t.time]
    return (
        len(times) >= FLAT_EVALS
        and all(len({t.config.get(n) for t in trials}) > 1 for n in names)
        and max(times) <= (1 + FLAT_SPREAD) * min(times)
    )


def _space_size(tunables: list[Tunable]) -> int:
    return math.prod(len(t.choices) for t in tunables) if tunables else 1


def _mutate(
    parent: tuple[int, ...], tunables: list[Tunable], rng: random.Random
) -> tuple[int, ...]:
    child = list(parent)
    count = 1 if rng.random() < 0.7 or len(tunables) == 1 else 2
    for i in rng.sample(range(len(tunables)), min(count, len(tunables))):
        choices = tunables[i].choices
        pos = choices.index(child[i]) if child[i] in choices else 0
        if rng.random() < 0.8:
            pos = min(max(pos + rng.choice((-1, 1)), 0), len(choices) - 1)
        else:
            pos = rng.randrange(len(choices))
        child[i] = choices[pos]
    return tuple(child)


def _listed_first(source: str, names: list[str], start: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The configurations a compiler listed for the kernels (listed_configs.py) where no benchmark
    picked among them, likeliest first by the hardware model: timed before any mutant."""
    out: list[tuple[int, ...]] = []
    for trial in listed_trials(source, set(names)):
        values = tuple(trial.get(n, v) for n, v in zip(names, start, strict=True))
        if values != start and values not in out:
            out.append(values)
    return sorted(out, key=lambda v: prior(dict(zip(names, v, strict=True))))


def tune(
    source: str,
    evaluate: Callable[[str], float | RejectedAhead | None],
    *,
    budget_evals: int,
    seed: int = 0,
    tunables: list[Tunable] | None = None,
    recheck: int = 0,
    baseline: float | None = None,
    give_up_ratio: float = GIVE_UP_RATIO,
    probe: int = PROBE_EVALS,
    eager: float | None = None,
    slower_share: float = SLOWER_THAN_EAGER_SHARE,
    stop: Callable[[], str | None] | None = None,
    width: int = 1,
    at_floor: Callable[[float], str | None] | None = None,
) -> TuneResult:
    """Best source found within budget_evals calls of evaluate (lower time is better).

    recheck: that many of the budget go to timing the best few configurations a second
    time at the end; they are ranked by the mean of both timings (noisy timers flatter
    whichever configuration got lucky once).
    baseline: the time to beat (the better of eager and torch.compile). A family whose best of
    its first `probe` timed configurations is still give_up_ratio times slower gets no more of
    the budget: neighbouring tiles rarely close a gap that wide, and each costs a GPU evaluation.
    A configuration whose timing is PRUNE_RATIO times the baseline or more is pruned: it is never
    mutated nor timed again. A family whose timed configurations (FLAT_EVALS or more, every tunable
    moved at least once) all lie within FLAT_SPREAD of each other stops: its time is spent where
    launch parameters do not reach (a library GEMM beside a small epilogue kernel, say), and each
    further configuration costs a GPU evaluation for a gain inside the noise. eager: a family
    whose best is still slower than eager once `slower_share` of the budget is spent gets no more
    of it. stop: asked before each evaluation; a reason (the search's time budget spent) ends the
    tuning with what it has. width: configurations evaluated side by side (each call of
    `evaluate` from a thread of its own); one compiles ahead or holds a second GPU slot while
    another is judged, and a stop rule may let up to width - 1 more of the budget be spent.
    at_floor: given the best time so far, a reason when that time is at the task's roofline floor
    (search/headroom.py); no configuration can then gain beyond the noise, and the tuning stops.
    """
    rng = random.Random(seed)
    history: list[Trial] = []
    flat = False
    free = FREE_REJECTS_PER_EVAL * budget_evals
    stopped: list[str] = []

    def halted() -> bool:
        if not stopped and stop is not None and (why := stop()):
            stopped.append(why)
        return bool(stopped)

    def timed(text: str) -> float | None:
        t = evaluate(text)
        return None if isinstance(t, RejectedAhead) else t

    recheck = max(0, min(recheck, budget_evals // 2))
    budget = max(0, budget_evals - recheck)
    note = ""

    base_source, base_time, evaluated_base = source, None, False
    variants = autotune_variants(source) if "autotune" in source else []
    if variants is None:
        note = "@triton.autotune configs are built at run time; left in place"
    elif variants:
        best_i = None
        for i, (label, text) in enumerate(variants[:budget]):
            if halted():
                break
            t = timed(text)
            history.append(Trial({"autotune": i}, t, label))
            if t is not None and (base_time is None or t < base_time):
                base_time, best_i = t, i
        budget -= min(budget, len(variants))
        base_source = variants[best_i if best_i is not None else 0][1]
        evaluated_base = best_i is not None
        note = f"@triton.autotune stripped: config {best_i if best_i is not None else 0} of {len(variants)}"

    tunables = find_tunables(base_source) if tunables is None else tunables
    names = [t.name for t in tunables]
    start = tuple(t.value for t in tunables)
    seen: dict[tuple[int, ...], float | None] = {}
    if evaluated_base:
        seen[start] = base_time

    def run_all(batch: list[tuple[int, ...]]) -> None:
        """Evaluate `batch` side by side, then count each result in order."""
        nonlocal budget
        if halted():
            budget = 0
            return
        texts = [
            apply_config(base_source, tunables, dict(zip(names, v, strict=True))) for v in batch
        ]
        if len(texts) == 1:
            results = [evaluate(texts[0])]
        else:
            with ThreadPoolExecutor(len(texts)) as pool:
                results = list(pool.map(evaluate, texts))
        for values, t in zip(batch, results, strict=True):
            record(values, t)

    def record(values: tuple[int, ...], t: float | RejectedAhead | None) -> None:
        nonlocal budget, free, note, flat
        config = dict(zip(names, values, strict=True))
        if isinstance(t, RejectedAhead):
            t = None
            if free > 0:
                free -= 1
                seen[values] = None
                history.append(Trial(config, None, "rejected ahead"))
                return
        budget -= 1
        seen[values] = t
        history.append(Trial(config, t))
        timed_so_far = [x for x in seen.values() if x is not None] + (
            [base_time] if base_time is not None else []
        )
        best = f"{min(timed_so_far):.4g} ms" if timed_so_far else "no valid configuration"
        if budget > 0 and at_floor and timed_so_far and (why := at_floor(min(timed_so_far))):
            note = _stopped(note, len(history), why)
            budget = 0
        elif (
            baseline
            and budget > 0
            and len(history) >= probe
            and (not timed_so_far or min(timed_so_far) > give_up_ratio * baseline)
        ):
            note = _stopped(
                note, len(history), f"best {best} against the baseline's {baseline:.4g} ms"
            )
            budget = 0
        elif budget > 0 and _flat(plain := [h for h in history if h.label == "" and h.time], names):
            fastest = min(h.time for h in plain if h.time)
            note = _stopped(
                note,
                len(history),
                f"{len(plain)} configurations all within {FLAT_SPREAD:.0%} of {fastest:.4g} ms "
                "(its time is not in its launch parameters)",
            )
            budget, flat = 0, True
        elif (
            eager
            and budget > 0
            and sum(h.label == "" for h in history) >= math.ceil(slower_share * budget_evals)
            and (not timed_so_far or min(timed_so_far) >= eager)
        ):
            note = _stopped(
                note,
                len(history),
                f"best {best} is not faster than eager's {eager:.4g} ms "
                f"(a family slower than eager gets {slower_share:.0%} of the budget)",
            )
            budget = 0

    def breeding(pairs: list[tuple[float, tuple[int, ...]]]) -> list[tuple[float, tuple[int, ...]]]:
        """Pruned: timings PRUNE_RATIO times the baseline or more, unless nothing else is valid."""
        kept = [p for p in pairs if not baseline or p[0] < PRUNE_RATIO * baseline]
        return kept or pairs

    width = max(1, width)

    def run_in_turn(queue: list[tuple[int, ...]]) -> None:
        i = 0
        while i < len(queue) and budget > 0:
            n = min(width, budget)
            run_all(queue[i : i + n])
            i += n

    listed = [start] if start not in seen else []
    for values in _listed_first(base_source, names, start):
        if values not in seen and values not in listed:
            listed.append(values)
    run_in_turn(listed)
    if tunables and budget > 0:
        size = _space_size(tunables)
        if size - len(seen) <= budget:
            rest = [v for v in itertools.product(*(t.choices for t in tunables)) if v not in seen]
            rng.shuffle(rest)
            rest.sort(
                key=lambda v: prior(dict(zip(names, v, strict=True)))
            )  # plausible ones first: a cut budget keeps them
            run_in_turn(rest)
        else:
            stale, batch = 0, []
            while budget > 0 and stale < 200:
                valid = breeding(sorted((t, v) for v, t in seen.items() if t is not None))
                if valid:
                    elite = [v for _, v in valid[:5]]
                    a, b = rng.choice(elite), rng.choice(elite)
                    parent = a if seen[a] <= seen[b] else b  # type: ignore[operator]
                    child = _mutate(parent, tunables, rng)
                    if (
                        len(history) < PRIOR_EVALS
                    ):  # the first few: the likeliest of a handful of mutants
                        kids = sorted(
                            {child, *(_mutate(parent, tunables, rng) for _ in range(3))} - set(seen)
                        )
                        child = (
                            min(kids, key=lambda v: prior(dict(zip(names, v, strict=True))))
                            if kids
                            else child
                        )
                else:
                    child = tuple(rng.choice(t.choices) for t in tunables)
                if child in seen or child in batch:
                    stale += 1
                    continue
                stale = 0
                batch.append(child)
                if len(batch) >= min(width, budget):
                    run_all(batch)
                    batch = []
            if batch and budget > 0:
                run_all(batch)

    if recheck and not halted():
        ranked = [
            p
            for p in sorted((t, v) for v, t in seen.items() if t is not None)
            if not baseline or p[0] < PRUNE_RATIO * baseline
        ][:recheck]
        for first, values in ranked:
            config = dict(zip(names, values, strict=True))
            if halted():
                break
            again = timed(apply_config(base_source, tunables, config))
            history.append(Trial(config, again, "recheck"))
            seen[values] = None if again is None else (first + again) / 2
    if stopped:
        note = _stopped(note, len(history), stopped[0])
    valid = [(t, v) for v, t in seen.items() if t is not None]
    if not valid:
        return TuneResult(base_source, base_time, history, {}, note, flat)
    best_time, best_values = min(valid, key=lambda p: p[0])
    best_config = dict(zip(names, best_values, strict=True))
    return TuneResult(
        apply_config(base_source, tunables, best_config),
        best_time,
        history,
        best_config,
        note,
        flat,
    )
