"""What a search is asked to do (`SearchConfig`: budgets, model settings, device, how many
requests in flight) and what it hands back (`SearchResult`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kernelevo.outcome import RunOutcome
from kernelevo.search.population import Program


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
    concurrency: int | None = (
        None  # model requests in flight; None: derived from measured latencies
    )
    max_in_flight: int = 96
    repair_tries: int = 3
    seed: int = 0
    n_islands: int = 2
    max_tokens: int | None = (
        None  # None: the model's settings (config file), see llm/model_settings.py
    )
    thinking_tokens: int | None = None
    effort: str | None = None
    device: str = "cpu"
    size: str | None = None
    base_url: str | None = None
    source_file: str = ""
    target_id: str = ""
    source_hash: str = ""
    offline_seeds: bool = True
    tune_evals: int = 12
    tune_top: int = 2
    stop_at_floor: bool = True  # search/headroom.py: no tuning or model calls past the floor

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
    outcome: RunOutcome | None = None
