"""A fake Anthropic Messages API (`POST /v1/messages`) for tests and end-to-end runs.

    with serve_anthropic(["first reply", error(429, retry_after=0), kernel_reply(code)]) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test-key"}
        ...
        assert sent_key(server.requests[0]) == "test-key"

Strict like the real API: an empty text block (in system or messages), a final assistant turn
ending in whitespace, a thinking budget below 1,024 tokens or not below `max_tokens`, and an
assistant prefill with thinking on are refused with HTTP 400 and the API's message. With
`thinking` on, the reply starts with a thinking block (the provider must skip it); an empty
reply has no content blocks.

Usage is simulated with prompt caching: the text up to the last `cache_control` block is
written to the cache the first time the server sees it and read from it afterwards, at
4 characters a token; a Reply's `usage` overrides any count.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .scripted_server import (
    RecordedRequest,
    Reply,
    ScriptedServer,
    approx_tokens,
    retry_headers,
    sent_key,
)

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


class FakeAnthropic(ScriptedServer):
    base_path = ""  # the SDK appends /v1/messages

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cache: set[str] = set()
        self._ids = itertools.count(1)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> tuple:
        body = {
            "type": "error",
            "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message},
        }
        return (
            status,
            {
                "request-id": f"req_fake_err_{next(self._ids)}",
                **retry_headers(status, headers or {}),
            },
            body,
            0.0,
        )

    @staticmethod
    def invalid(body: dict[str, Any]) -> str | None:
        """The 400 message the real Messages API gives this body, or None if it accepts it."""
        for where, blocks in [("system", _blocks(body.get("system")))] + [
            (f"messages.{i}", _blocks(m.get("content")))
            for i, m in enumerate(body.get("messages", []))
        ]:
            if where != "system" and not blocks:
                return f"{where}: all messages must have non-empty content"
            for b in blocks:
                if b.get("type") == "text" and not b.get("text"):
                    return f"{where}: text content blocks must be non-empty"
        messages = body.get("messages", [])
        thinking = body.get("thinking") or {}
        if messages and messages[-1].get("role") == "assistant":
            last = "".join(b.get("text", "") for b in _blocks(messages[-1].get("content")))
            if last != last.rstrip():
                return "messages: final assistant content cannot end with trailing whitespace"
            if thinking.get("type") == "enabled":
                return "messages: when thinking is enabled, a final assistant message must start with a thinking block"
        if thinking.get("type") == "enabled":
            budget = int(thinking.get("budget_tokens") or 0)
            if budget < 1024:
                return (
                    "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                )
            if int(body.get("max_tokens") or 0) <= budget:
                return "`max_tokens` must be greater than `thinking.budget_tokens`"
        return None

    def route(self, req: RecordedRequest) -> tuple[int, dict[str, str], Any, float]:
        if req.method == "GET" and req.path.startswith("/v1/models"):
            data = [
                {"type": "model", "id": m, "display_name": m} for m in sorted(self.models or ())
            ]
            return (
                200,
                {},
                {"data": data, "has_more": False, "first_id": None, "last_id": None},
                0.0,
            )
        if req.method != "POST" or not req.path.startswith("/v1/messages"):
            return self._error(404, f"no route {req.method} {req.path}")
        if self.api_key is not None and sent_key(req) != self.api_key:
            return self._error(401, "invalid x-api-key")
        body = req.json if isinstance(req.json, dict) else {}
        model = body.get("model", "")
        if self.models is not None and model not in self.models:
            return self._error(404, f"model: {model}")
        problem = self.invalid(body)
        if problem:
            return self._error(400, problem)
        reply = self.next_reply(req)
        if reply.body is not None:
            return reply.status, reply.headers, reply.body, reply.delay_s
        if reply.status >= 400:
            status, headers, payload, _ = self._error(
                reply.status, reply.message or "error", reply.headers
            )
            return status, headers, payload, reply.delay_s
        n = next(self._ids)
        payload = {
            "id": f"msg_fake_{n}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": self._content(body, reply.text),
            "stop_reason": reply.stop_reason or "end_turn",
            "stop_sequence": None,
            "usage": self._usage(body, reply),
        }
        return (
            reply.status,
            {"request-id": f"req_fake_{n}", **reply.headers},
            payload,
            reply.delay_s,
        )

    @staticmethod
    def _content(body: dict[str, Any], text: str) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if (body.get("thinking") or {}).get("type") == "enabled":
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": "Considering the reference...",
                    "signature": "c2ln",
                }
            )
        if text:
            blocks.append({"type": "text", "text": text})
        return blocks

    def _usage(self, body: dict[str, Any], reply: Reply) -> dict[str, int]:
        blocks = _blocks(body.get("system"))
        for m in body.get("messages", []):
            blocks += _blocks(m.get("content"))
        texts = [b.get("text", "") for b in blocks]
        marks = [i for i, b in enumerate(blocks) if b.get("cache_control")]
        total = approx_tokens("".join(texts))
        read = write = 0
        if marks:
            prefix = "".join(texts[: marks[-1] + 1])
            key = hashlib.sha256(prefix.encode()).hexdigest()
            with self._lock:
                hit = key in self.cache
                self.cache.add(key)
            read, write = (approx_tokens(prefix), 0) if hit else (0, approx_tokens(prefix))
        usage = {
            "input_tokens": total - read - write,
            "output_tokens": max(approx_tokens(reply.text), 1),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
        }
        names = {
            "cache_read_tokens": "cache_read_input_tokens",
            "cache_write_tokens": "cache_creation_input_tokens",
        }
        for k, v in (reply.usage or {}).items():
            usage[names.get(k, k)] = v
        return usage


@contextmanager
def serve_anthropic(script: Any = (), **kwargs: Any) -> Iterator[FakeAnthropic]:
    """Start a FakeAnthropic on 127.0.0.1 for the duration of the block (see ScriptedServer)."""
    server = FakeAnthropic(script, **kwargs).start()
    try:
        yield server
    finally:
        server.stop()
