"""Any OpenAI-compatible chat completions endpoint through the `openai` SDK: OpenAI, vLLM,
SGLang, Ollama, OpenRouter, DeepSeek, ...

These servers cache prompt prefixes on their own (OpenAI from 1,024 tokens, vLLM/SGLang with
prefix caching on), so the system parts are sent first and joined in a fixed order; no
cache markers are sent. Cached input is read from `usage.prompt_tokens_details.cached_tokens`
(or DeepSeek's `prompt_cache_hit_tokens`) and subtracted from `prompt_tokens`, so Usage
counts it once, as a cache read.
"""

from __future__ import annotations

import asyncio
from typing import Any

import openai

from kernelevo.llm.provider import ParsedReply, SDKProvider
from kernelevo.llm.types import Message, Prompt, estimate_tokens


def build_messages(prompt: Prompt) -> list[dict[str, str]]:
    messages = []
    if prompt.system:
        messages.append({"role": "system", "content": "\n\n".join(p.text for p in prompt.system)})
    messages += [{"role": m.role, "content": m.content} for m in prompt.messages]
    return messages


def _extra(obj: Any, name: str) -> int:
    value = getattr(obj, name, None)
    if value is None:
        value = (getattr(obj, "model_extra", None) or {}).get(name)
    return int(value or 0)


class OpenAIProvider(SDKProvider):
    status_error = openai.APIStatusError
    timeout_error = openai.APITimeoutError
    connection_error = openai.APIConnectionError

    def _new_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=self._endpoint.api_key.reveal(),
            base_url=self.base_url,
            timeout=self.timeout_s,
            max_retries=self.max_retries,
            http_client=openai.DefaultAsyncHttpxClient(event_hooks=self._event_hooks()),
        )

    async def _send(
        self, client: openai.AsyncOpenAI, prompt: Prompt, max_tokens: int, temperature: float | None
    ) -> ParsedReply:
        kwargs: dict[str, Any] = {"model": self.model, "messages": build_messages(prompt)}
        # OpenAI's reasoning models accept only max_completion_tokens; other servers know max_tokens.
        kwargs["max_completion_tokens" if self.name == "openai" else "max_tokens"] = max_tokens
        if temperature is not None:
            kwargs["temperature"] = temperature
        if self.settings.effort:
            kwargs["reasoning_effort"] = (
                "high" if self.settings.effort == "max" else self.settings.effort
            )
        resp = await client.chat.completions.create(**kwargs)
        choice = resp.choices[0] if resp.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        u = resp.usage
        if u is None:  # some servers omit usage: fall back to estimates
            prompt_tokens, output, cached, written = (
                estimate_tokens(prompt),
                estimate_tokens(Prompt(messages=(Message("assistant", text),))),
                0,
                0,
            )
        else:
            details = u.prompt_tokens_details
            cached = _extra(details, "cached_tokens") if details is not None else 0
            cached = cached or _extra(u, "prompt_cache_hit_tokens")
            written = _extra(details, "cache_write_tokens") if details is not None else 0
            prompt_tokens, output = u.prompt_tokens or 0, u.completion_tokens or 0
        return ParsedReply(
            text,
            max(prompt_tokens - cached - written, 0),
            output,
            cached,
            written,
            resp.model or self.model,
            getattr(resp, "_request_id", None) or resp.id,
            choice.finish_reason if choice is not None else None,
        )

    async def _not_found_hint(self, client: openai.AsyncOpenAI) -> str:
        """Local servers (vLLM, Ollama) serve a few models with odd names: list them (not hundreds)."""
        try:
            page = await asyncio.wait_for(client.models.list(), timeout=min(self.timeout_s, 5.0))
            names = sorted(m.id for m in page.data)
        except Exception:
            return ""
        return f"; models served there: {', '.join(names)}" if 0 < len(names) <= 20 else ""
