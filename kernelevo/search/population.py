"""The population database: MAP-Elites cells on several islands.

Each island keeps, per cell of a small feature grid, its best program (the elite).
A cell is (backend, approach, size): 'approach' is how many kernels a forward
launches (one fused kernel vs several), 'size' a code-length bucket. Keeping the
best of each cell, rather than the best few overall, keeps different ideas alive;
islands evolve apart and exchange their best now and then (migration), so one
early lucky kernel does not take over the whole run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal

from kernelevo.verdict import Verdict

# How the prompt asks about a parent: refine it (exploit) or try another approach (explore).
Style = Literal["exploit", "explore"]


@dataclass
class Program:
    id: int
    source: str
    backend: str
    status: str
    speedup: float | None = None
    time_ms: float | None = None
    parent_id: int | None = None
    island: int = 0
    iteration: int = 0
    launches: int = 0
    origin: str = "llm"
    verdict: Verdict = field(default_factory=lambda: Verdict("unverified", "not judged"))

    @classmethod
    def judged(cls, id: int, source: str, backend: str, verdict: Verdict, **where: Any) -> Program:
        """A program as its verdict describes it (status, speed, kernel launches per forward
        call); `where` places it (parent_id, island, iteration, origin)."""
        t = verdict.timings or {}
        calls = sum(1 for c in verdict.checks if c.name.startswith(("match[", "same_buffers")))
        return cls(
            id=id,
            source=source,
            backend=backend,
            status=verdict.status,
            speedup=t.get("speedup_eager"),
            time_ms=t.get("candidate_ms"),
            launches=verdict.kernel_launches // max(1, calls),
            verdict=verdict,
            **where,
        )

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    @property
    def fitness(self) -> float:
        """Verified programs rank by speedup (1.0 when speed is not measured); failures below all."""
        if not self.verified:
            return -1.0
        return self.speedup if self.speedup is not None else 1.0

    def cell(self) -> tuple[str, str, str]:
        lines = self.source.count("\n")
        size = "short" if lines < 60 else "medium" if lines < 150 else "long"
        approach = (
            "fused"
            if self.launches <= 1
            else "multi-kernel"
            if self.launches <= 3
            else "many-kernels"
        )
        return self.backend, approach, size


class Population:
    def __init__(
        self,
        n_islands: int = 3,
        *,
        seed: int = 0,
        exploit_ratio: float = 0.7,
        migration_interval: int = 10,
    ) -> None:
        self.n_islands = max(1, n_islands)
        self.rng = random.Random(seed)
        self.exploit_ratio = exploit_ratio
        self.migration_interval = migration_interval
        self.programs: dict[int, Program] = {}
        self.islands: list[dict[tuple[str, str, str], int]] = [{} for _ in range(self.n_islands)]
        self.added = 0

    def add(self, program: Program) -> bool:
        """Add a program; returns True when it became its cell's elite."""
        self.programs[program.id] = program
        self.added += 1
        if not program.verified:
            return False
        cells = self.islands[program.island % self.n_islands]
        key = program.cell()
        current = cells.get(key)
        if current is None or program.fitness > self.programs[current].fitness:
            cells[key] = program.id
            return True
        return False

    def island_for_next(self, iteration: int) -> int:
        return iteration % self.n_islands

    def best(self) -> Program | None:
        verified = [p for p in self.programs.values() if p.verified]
        return max(verified, key=lambda p: (p.fitness, -p.id)) if verified else None

    def elites(self, island: int | None = None) -> list[Program]:
        islands = self.islands if island is None else [self.islands[island % self.n_islands]]
        return sorted(
            (self.programs[i] for cells in islands for i in cells.values()),
            key=lambda p: (-p.fitness, p.id),
        )

    def select_parent(self, island: int) -> tuple[Program | None, Style]:
        """(parent, prompt style): exploit (the island's best, refined) with probability
        exploit_ratio, else explore (a random elite of the island, asked for another approach)."""
        elites = self.elites(island) or self.elites()
        if not elites:
            return None, "exploit"
        if self.rng.random() < self.exploit_ratio:
            return elites[0], "exploit"
        return self.rng.choice(elites), "explore"

    def inspirations(
        self, parent: Program | None, island: int | None = None, k_top: int = 2, k_diverse: int = 1
    ) -> list[Program]:
        """The island's best programs plus an elite of another cell, never the parent itself;
        other islands' programs arrive only by migration (that keeps islands apart)."""
        own = self.elites(island) if island is not None else self.elites()
        pool = [p for p in own if parent is None or p.id != parent.id]
        top = pool[:k_top]
        rest = [p for p in pool[k_top:] if parent is None or p.cell() != parent.cell()]
        diverse = self.rng.sample(rest, min(k_diverse, len(rest))) if rest else []
        return top + diverse

    def attempts(self, parent: Program | None) -> list[Program]:
        """Every program evaluated from this parent so far (from scratch when None), oldest first:
        what the next proposal from it must not repeat."""
        pid = parent.id if parent is not None else None
        return sorted(
            (
                p
                for p in self.programs.values()
                if p.parent_id == pid and p.origin in ("llm", "repair")
            ),
            key=lambda p: p.id,
        )

    def maybe_migrate(self, iteration: int) -> bool:
        """Every `migration_interval` iterations, each island's best joins the next island (a ring)."""
        if self.n_islands < 2 or iteration == 0 or iteration % self.migration_interval:
            return False
        bests = [self.elites(i)[0] if self.elites(i) else None for i in range(self.n_islands)]
        moved = False
        for i, p in enumerate(bests):
            if p is None:
                continue
            dest = self.islands[(i + 1) % self.n_islands]
            key = p.cell()
            cur = dest.get(key)
            if cur is None or p.fitness > self.programs[cur].fitness:
                dest[key] = p.id
                moved = True
        return moved

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.programs.values():
            out[p.status] = out.get(p.status, 0) + 1
        return out
