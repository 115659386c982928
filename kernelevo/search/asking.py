"""Asking the model for one answer of a search: reuse a paid answer from the store, reserve
room in the budget (waiting while other requests in flight hold it), continue a reply cut off
at max_tokens where the API allows an assistant prefill, and record every call."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from kernelevo.llm import Budget, BudgetExhausted, Message, Prompt, request_hash
from kernelevo.phase import Phase
from kernelevo.search.throughput import Throughput
from kernelevo.store import Store

BUDGET_WAIT_S = 0.2


@dataclass
class Answer:
    text: str
    truncated: bool
    reused: bool


class Asker:
    def __init__(
        self, provider: Any, store: Store, run_id: str, budget: Budget, throughput: Throughput
    ) -> None:
        self.provider, self.store, self.run_id = provider, store, run_id
        self.budget, self.throughput = budget, throughput

    def _can_continue(self) -> bool:
        """Whether an assistant prefill continues a cut-off reply (the provider says: Anthropic without thinking)."""
        return bool(getattr(self.provider, "continues_prefill", False))

    async def _complete(self, prompt: Prompt) -> Any:
        """One call; a reservation refused while others are in flight waits for them, not the run's end."""
        while True:
            try:
                return await self.provider.complete(prompt, budget=self.budget)
            except BudgetExhausted:
                if self.budget.exhausted() or self.budget.snapshot()["in_flight"] == 0:
                    raise
                await asyncio.sleep(BUDGET_WAIT_S)

    def _record(self, prompt: Prompt, phase: Phase, completion: Any, text: str) -> None:
        self.store.add_llm_call(
            self.run_id,
            request_hash=request_hash(prompt, getattr(self.provider, "model", "")),
            phase=phase,
            provider=getattr(self.provider, "name", ""),
            model=completion.model,
            prompt={
                "system": [p.text for p in prompt.system],
                "messages": [[m.role, m.content] for m in prompt.messages],
            },
            response_text=text,
            usage=completion.usage.to_dict(),
        )

    async def ask(self, prompt: Prompt, phase: Phase) -> Answer:
        stored = self.store.find_llm_call(self.run_id, phase)
        if stored is not None:
            return Answer(stored["response_text"], False, True)
        limits = getattr(self.provider, "rate_limits", 0)
        completion = await self._complete(prompt)
        await self.throughput.saw_reply(
            completion.latency_s, getattr(self.provider, "rate_limits", 0) > limits
        )
        text = completion.text
        self._record(prompt, phase, completion, text)
        if completion.truncated and text.strip() and self._can_continue():
            head = text.rstrip()  # the API refuses a final assistant turn ending in whitespace
            more = await self._complete(
                Prompt(
                    system=prompt.system, messages=(*prompt.messages, Message("assistant", head))
                )
            )
            text = head + more.text
            self._record(prompt, phase, more, text)  # the latest row of a phase is its whole answer
            return Answer(text, more.truncated, False)
        return Answer(text, completion.truncated, False)
