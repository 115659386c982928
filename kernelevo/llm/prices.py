"""USD per million tokens, per model, so every call's cost is recorded.

A Python table rather than a data file so it ships without package-data changes.
Prices change: the config file's `[prices."<model>"]` tables override or extend this one
(`input`, `output`, `cache_read`, `cache_write`), and `[default_price]` prices unknown
models. A model priced by neither costs 0 and its Usage says `cost_known=False`.

Sources (checked 2026-10): platform.claude.com pricing and model pages; OpenAI and
DeepSeek pricing pages. Anthropic cache writes are the 5-minute rate (1.25x input).
Haiku 5.5 is the <=100k-token-prompt band; longer prompts cost 5x and are not modelled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_SNAPSHOT = re.compile(r"[-@](\d{4}-?\d{2}-?\d{2}|latest)([-:].*)?$")


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_read: float | None = None  # None: same as input (no discount known)
    cache_write: float | None = None  # None: same as input

    def cost(
        self, input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0
    ) -> float:
        cr = self.input if self.cache_read is None else self.cache_read
        cw = self.input if self.cache_write is None else self.cache_write
        return (
            input_tokens * self.input
            + output_tokens * self.output
            + cache_read * cr
            + cache_write * cw
        ) / 1e6

    @property
    def worst_input(self) -> float:
        """The dearest way an input token can be billed (cache writes cost more than input)."""
        return max(self.input, self.cache_write or 0.0, self.cache_read or 0.0)


def _claude(inp: float, out: float, read: float | None = None) -> Price:
    return Price(
        inp,
        out,
        cache_read=round(inp * 0.1, 6) if read is None else read,
        cache_write=round(inp * 1.25, 6),
    )


PRICES: dict[str, Price] = {
    # Anthropic
    "claude-fable-5-1": _claude(10.0, 50.0, 0.25),
    "claude-mythos-5-1": _claude(10.0, 50.0, 0.25),
    "claude-fable-5": _claude(10.0, 50.0, 1.0),
    "claude-mythos-5": _claude(10.0, 50.0, 1.0),
    "claude-opus-5-5": _claude(4.0, 20.0, 0.20),
    "claude-opus-5": _claude(5.0, 25.0),
    "claude-opus-4-8": _claude(5.0, 25.0),
    "claude-opus-4-7": _claude(5.0, 25.0),
    "claude-opus-4-6": _claude(5.0, 25.0),
    "claude-opus-4-5": _claude(5.0, 25.0),
    "claude-opus-4-1": _claude(15.0, 75.0),
    "claude-opus-4": _claude(15.0, 75.0),
    "claude-sonnet-5-5": _claude(2.0, 10.0, 0.20),
    "claude-sonnet-5": _claude(2.0, 10.0, 0.20),
    "claude-sonnet-4-6": _claude(3.0, 15.0),
    "claude-sonnet-4-5": _claude(3.0, 15.0),
    "claude-sonnet-4": _claude(3.0, 15.0),
    "claude-haiku-5-5": Price(0.10, 0.50, cache_read=0.01, cache_write=0.125),
    "claude-haiku-4-5": _claude(1.0, 5.0),
    # OpenAI (cached input is the cache_read price; no cache write surcharge)
    "gpt-5": Price(1.25, 10.0, cache_read=0.125),
    "gpt-5-mini": Price(0.25, 2.0, cache_read=0.025),
    "gpt-5-nano": Price(0.05, 0.40, cache_read=0.005),
    "gpt-4.1": Price(2.0, 8.0, cache_read=0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, cache_read=0.10),
    "gpt-4o": Price(2.50, 10.0, cache_read=1.25),
    "gpt-4o-mini": Price(0.15, 0.60, cache_read=0.075),
    "o3": Price(2.0, 8.0, cache_read=0.50),
    "o4-mini": Price(1.10, 4.40, cache_read=0.275),
    # DeepSeek (cache hit / miss input)
    "deepseek-chat": Price(0.28, 0.42, cache_read=0.028),
    "deepseek-reasoner": Price(0.28, 0.42, cache_read=0.028),
}


def price_for(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """Exact name first, then without a router prefix ("anthropic/..."), with dots as dashes
    ("claude-sonnet-4.5"), then a dated snapshot of a table name ("...-20250929", "-latest")."""
    table = {**PRICES, **(overrides or {})}
    candidates = [model]
    if "/" in model:
        candidates.append(model.rsplit("/", 1)[1])
    for name in candidates:
        if name in table:
            return table[name]
        dotted = name.replace(".", "-")
        if dotted in table:
            return table[dotted]
    for name in candidates:
        for key in sorted(table, key=len, reverse=True):
            for form in (name, name.replace(".", "-")):
                if form.startswith(key) and _SNAPSHOT.fullmatch(form[len(key) :]):
                    return table[key]
    return None


def check_priced(provider: object, budget_usd: float | None, config_file: str) -> None:
    """A dollar budget needs the model's price: without one every call would cost $0.00 and the
    budget would never stop the run. Raises LLMError saying what to add to the config file."""
    from kernelevo.llm.errors import LLMError

    price = getattr(provider, "price", None)
    if budget_usd is None or price is None:
        return
    _, known = price()
    if not known:
        model = getattr(provider, "model", "?")
        raise LLMError(
            f"--budget-usd needs the price of model {model!r}, which KernelEvo does not know: add "
            f'[prices."{model}"] with input = and output = (USD per million tokens) to {config_file}, '
            f"or drop --budget-usd"
        )
