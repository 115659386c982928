"""Anthropic's Messages API through the `anthropic` SDK, with prompt caching.

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
    system = [{"type": "text", "text": p.text} for p in prompt.system]
    messages = [{"role": m.role, "content": [{"type": "text", "text": m.content}]} for m in prompt.messages]
    marked = [system[i] for i, p in enumerate(prompt.system) if p.cache]
    marked += [messages[i]["content"][0] for i, m in enumerate(prompt.messages) if m.cache]
    for block in marked[-MAX_BREAKPOINTS:]:
        block["cache_control"] = dict(_CACHE)
    return system, messages


class AnthropicProvider(SDKProvider):
    status_error = anthropic.APIStatusError
    timeout_error = anthropic.APITimeoutError
    connection_error = anthropic.APIConnectionError

    def _new_client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(api_key=self._endpoint.api_key.reveal(), base_url=self.base_url,
                                        timeout=self.timeout_s, max_retries=0)

    async def _send(self, client: anthropic.AsyncAnthropic, prompt: Prompt, max_tokens: int,
                    temperature: float | None) -> ParsedReply:
        system, messages = build_request(prompt)
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": messages}
        if system:
            kwargs["system"] = system
        if temperature is not None:  # no longer a named SDK parameter; newer models reject it
            kwargs["extra_body"] = {"temperature": temperature}
        msg = await client.messages.create(**kwargs)
        text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", None) == "text")
        u = msg.usage
        return ParsedReply(text, u.input_tokens or 0, u.output_tokens or 0, u.cache_read_input_tokens or 0,
                     u.cache_creation_input_tokens or 0, msg.model, getattr(msg, "_request_id", None) or msg.id,
                     msg.stop_reason)
