"""Anthropic's Messages API through the `anthropic` SDK, with prompt caching.

Extended thinking (`thinking_tokens`) and effort come from the model's settings; thinking
counts inside `max_tokens`, and only the reply's text blocks are returned.

Every system part or message marked `cache=True` gets `cache_control: ephemeral`, so the
stable prefix (instructions, task, reference code) is written to the cache once and read at
a tenth of the input price by every later proposal. Anthropic allows four breakpoints; if
more parts are marked, the last four are kept (a breakpoint caches everything before it).
"""

from __future__ import annotations

from typing import Any

import anthropic

from kernelevo.llm.provider import ParsedReply, SDKProvider
from kernelevo.llm.types import Prompt

MAX_BREAKPOINTS = 4
_CACHE = {"type": "ephemeral"}


def build_request(prompt: Prompt) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages) in the Messages API's shape, cache breakpoints placed."""
    system: list[dict[str, Any]] = [{"type": "text", "text": p.text} for p in prompt.system]
    messages: list[dict[str, Any]] = [
        {"role": m.role, "content": [{"type": "text", "text": m.content}]} for m in prompt.messages
    ]
    marked = [system[i] for i, p in enumerate(prompt.system) if p.cache]
    marked += [messages[i]["content"][0] for i, m in enumerate(prompt.messages) if m.cache]
    for block in marked[-MAX_BREAKPOINTS:]:
        block["cache_control"] = dict(_CACHE)
    return system, messages


class AnthropicProvider(SDKProvider):
    status_error = anthropic.APIStatusError
    timeout_error = anthropic.APITimeoutError
    connection_error = anthropic.APIConnectionError

    @property
    def continues_prefill(self) -> bool:
        """A final assistant turn is continued, not answered anew; the API refuses one when thinking is on."""
        return not self.settings.thinking_tokens

    def _new_client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=self._endpoint.api_key.reveal(),
            base_url=self.base_url,
            timeout=self.timeout_s,
            max_retries=self.max_retries,
            http_client=anthropic.DefaultAsyncHttpxClient(event_hooks=self._event_hooks()),
        )

    async def _send(
        self,
        client: anthropic.AsyncAnthropic,
        prompt: Prompt,
        max_tokens: int,
        temperature: float | None,
    ) -> ParsedReply:
        system, messages = build_request(prompt)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": messages,
        }
        if system:
            kwargs["system"] = system
        extra: dict[str, Any] = {}
        if (
            temperature is not None and not self.settings.thinking_tokens
        ):  # newer models reject it; thinking too
            extra["temperature"] = temperature
        if self.settings.thinking_tokens:
            kwargs["thinking"] = {"type": "enabled", "budget_tokens": self.settings.thinking_tokens}
        if self.settings.effort:
            extra["output_config"] = {"effort": self.settings.effort}
        if extra:
            kwargs["extra_body"] = extra
        msg = await client.messages.create(**kwargs)
        text = "".join(
            getattr(b, "text", "") for b in msg.content if getattr(b, "type", None) == "text"
        )
        u = msg.usage
        return ParsedReply(
            text,
            u.input_tokens or 0,
            u.output_tokens or 0,
            u.cache_read_input_tokens or 0,
            u.cache_creation_input_tokens or 0,
            msg.model,
            getattr(msg, "_request_id", None) or msg.id,
            msg.stop_reason,
        )
