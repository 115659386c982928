"""Recorded responses: record a run's completions, then replay them deterministically and free
(e.g. rerun a search on the GPU machine without any LLM access).

File format: JSON Lines, one completion per line:
    {"request_hash": "<sha256>", "text": "...", "usage": {"input_tokens": 1, ...},
     "model": "...", "stop_reason": "end_turn"}
Only "text" is required. A request is answered by the first unused line with its
`request_hash(prompt, model)`; if none matches (or lines carry no hash), by the next unused
line in file order. Replayed usage is the recorded usage, so budgets stop a replayed run
exactly where they stopped the recorded one; nothing is spent. With `pace=True` each answer
takes its recorded `latency_s` (a line may set it), so a replayed search keeps the recorded
run's timing: how many requests it keeps in flight and how busy the GPUs are can be measured
without a model service.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import deque
from pathlib import Path
from typing import Any

from kernelevo.llm.budget import Budget
from kernelevo.llm.errors import LLMError
from kernelevo.llm.model_settings import DEFAULT_MAX_TOKENS
from kernelevo.llm.provider import Provider
from kernelevo.llm.types import Completion, Prompt, Usage, estimate_tokens, request_hash

log = logging.getLogger("kernelevo.llm")


class ReplayProvider:
    name = "replay"

    def __init__(self, path: Path | str, model: str | None = None, *, pace: bool = False) -> None:
        self.path = Path(path)
        self.pace = pace
        if not self.path.is_file():
            raise LLMError(
                f"replay file {self.path} does not exist (record one with record_to=...)",
                provider="replay",
            )
        self._records: list[dict[str, Any]] = []
        for lineno, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LLMError(
                    f"{self.path}:{lineno}: not JSON: {exc.msg}", provider="replay"
                ) from None
            if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                raise LLMError(
                    f"{self.path}:{lineno}: a replay line needs a string 'text'", provider="replay"
                )
            record["_line"] = lineno
            self._records.append(record)
        first_model = next(
            (r["model"] for r in self._records if isinstance(r.get("model"), str)), None
        )
        self.model = model or first_model or "replay"
        self._by_hash: dict[str, deque[int]] = {}
        for i, r in enumerate(self._records):
            if isinstance(r.get("request_hash"), str):
                self._by_hash.setdefault(r["request_hash"], deque()).append(i)
        self._used = [False] * len(self._records)
        self._next = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ReplayProvider(path={str(self.path)!r}, model={self.model!r})"

    def _take(self, key: str) -> dict[str, Any]:
        with self._lock:
            queue = self._by_hash.get(key)
            while queue:
                i = queue.popleft()
                if not self._used[i]:
                    self._used[i] = True
                    return self._records[i]
            while self._next < len(self._records) and self._used[self._next]:
                self._next += 1
            if self._next == len(self._records):
                raise LLMError(
                    f"replay file {self.path} has no response left for request {key[:12]} "
                    f"({len(self._records)} recorded)",
                    provider="replay",
                )
            self._used[self._next] = True
            log.debug(
                "replay: no line for request %s, using line %d in order",
                key[:12],
                self._records[self._next]["_line"],
            )
            return self._records[self._next]

    async def complete(
        self,
        prompt: Prompt,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        budget: Budget | None = None,
    ) -> Completion:
        max_tokens = max_tokens or DEFAULT_MAX_TOKENS
        reservation = (
            budget.reserve(estimate_tokens(prompt) + max_tokens) if budget is not None else None
        )
        try:
            record = self._take(request_hash(prompt, self.model))
        except BaseException:
            if reservation is not None:
                budget.release(reservation)  # type: ignore[union-attr]
            raise
        latency = float(record.get("latency_s") or 0.0) if self.pace else 0.0
        if latency:
            await asyncio.sleep(latency)
        usage = Usage.from_dict(record.get("usage") or {})
        model = record.get("response_model") or record.get("model") or self.model
        completion = Completion(
            record["text"],
            usage,
            model,
            self.name,
            f"replay:{record['_line']}",
            latency,
            record.get("stop_reason"),
        )
        if budget is not None:
            budget.charge(usage, reservation)
        return completion

    async def aclose(self) -> None:
        pass


class RecordingProvider:
    """Wraps a provider and appends each completion to a JSONL file ReplayProvider reads."""

    def __init__(self, inner: Provider, path: Path | str) -> None:
        self.inner = inner
        self.path = Path(path)
        self.name, self.model = inner.name, inner.model
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RecordingProvider({self.inner!r}, path={str(self.path)!r})"

    async def complete(
        self,
        prompt: Prompt,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        budget: Budget | None = None,
    ) -> Completion:
        completion = await self.inner.complete(
            prompt, max_tokens=max_tokens, temperature=temperature, budget=budget
        )
        line = json.dumps(
            {
                "request_hash": request_hash(prompt, self.model),
                "text": completion.text,
                "usage": completion.usage.to_dict(),
                "model": self.model,
                "response_model": completion.model,
                "provider": completion.provider,
                "stop_reason": completion.stop_reason,
                "latency_s": round(completion.latency_s, 3),
            },
            ensure_ascii=False,
        )
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
        return completion

    async def aclose(self) -> None:
        await self.inner.aclose()
