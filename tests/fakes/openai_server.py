"""A fake OpenAI chat completions API (`POST /v1/chat/completions`, `GET /v1/models`).

    with serve_openai(["a reply"], models=["qwen-coder"]) as server:
        provider = make_provider("vllm", "qwen-coder", base_url=server.base_url)

Usage is simulated with automatic prefix caching: the system message's tokens are reported
as `prompt_tokens_details.cached_tokens` from the second time the server sees it (4 characters
a token); a Reply's `usage` (input_tokens = uncached prompt tokens, output_tokens,
cache_read_tokens) overrides any count.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .scripted_server import RecordedRequest, Reply, ScriptedServer, approx_tokens, retry_headers


class FakeOpenAI(ScriptedServer):
    base_path = "/v1"  # the SDK appends /chat/completions

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cache: set[str] = set()
        self._ids = itertools.count(1)

    def _error(
        self,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        code: str | None = None,
    ) -> tuple:
        kind = {
            401: "invalid_request_error",
            404: "invalid_request_error",
            429: "rate_limit_exceeded",
        }
        body = {
            "error": {
                "message": message,
                "type": kind.get(status, "server_error"),
                "param": None,
                "code": code,
            }
        }
        return (
            status,
            {
                "x-request-id": f"req_fake_err_{next(self._ids)}",
                **retry_headers(status, headers or {}),
            },
            body,
            0.0,
        )

    def route(self, req: RecordedRequest) -> tuple[int, dict[str, str], Any, float]:
        if req.method == "GET" and req.path.startswith("/v1/models"):
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                for m in sorted(self.models or ())
            ]
            return 200, {}, {"object": "list", "data": data}, 0.0
        if req.method != "POST" or not req.path.startswith("/v1/chat/completions"):
            return self._error(404, f"no route {req.method} {req.path}")
        auth = req.headers.get("authorization", "")
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            given = auth.removeprefix("Bearer ")
            return self._error(401, f"Incorrect API key provided: {given}.", code="invalid_api_key")
        body = req.json if isinstance(req.json, dict) else {}
        model = body.get("model", "")
        if self.models is not None and model not in self.models:
            return self._error(
                404,
                f"The model `{model}` does not exist or you do not have access to it.",
                code="model_not_found",
            )
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
            "id": f"chatcmpl-fake{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": reply.stop_reason or "stop",
                    "logprobs": None,
                }
            ],
            "usage": self._usage(body, reply),
        }
        return (
            reply.status,
            {"x-request-id": f"req_fake_{n}", **reply.headers},
            payload,
            reply.delay_s,
        )

    def _usage(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        messages = body.get("messages", [])
        texts = [m.get("content") or "" for m in messages if isinstance(m.get("content"), str)]
        prompt = approx_tokens("".join(texts))
        system = "".join(m.get("content") or "" for m in messages if m.get("role") == "system")
        cached = 0
        if system:
            key = hashlib.sha256(system.encode()).hexdigest()
            with self._lock:
                cached = approx_tokens(system) if key in self.cache else 0
                self.cache.add(key)
        output = max(approx_tokens(reply.text), 1)
        o = reply.usage or {}
        cached = o.get("cache_read_tokens", cached)
        prompt = o["input_tokens"] + cached if "input_tokens" in o else prompt
        output = o.get("output_tokens", output)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": cached},
        }


@contextmanager
def serve_openai(script: Any = (), **kwargs: Any) -> Iterator[FakeOpenAI]:
    """Start a FakeOpenAI on 127.0.0.1 for the duration of the block (see ScriptedServer)."""
    server = FakeOpenAI(script, **kwargs).start()
    try:
        yield server
    finally:
        server.stop()
