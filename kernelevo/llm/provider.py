"""The Provider protocol and the machinery every SDK-backed provider shares.

The API is async: `await provider.complete(prompt, ...)`. The search keeps several proposals
in flight as asyncio tasks; each provider bounds how many of its requests are open at once
with a semaphore (`max_concurrency`) and charges a shared Budget. Transient failures (429,
408/409, 5xx, timeouts, lost connections) are retried by the SDKs themselves (`max_retries`,
jittered exponential backoff, the server's `retry-after-ms`/`retry-after` honoured); this
layer only turns what still fails into its own errors. SDK clients and the semaphore are
bound to the running event loop and rebuilt if a later `asyncio.run` brings a new one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from kernelevo.llm.budget import Budget
from kernelevo.llm.errors import (
    AuthError,
    LLMError,
    ModelNotFound,
    ProviderUnavailable,
    RateLimited,
)
from kernelevo.llm.model_settings import ModelSettings
from kernelevo.llm.prices import Price, price_for
from kernelevo.llm.provider_config import Endpoint
from kernelevo.llm.redact import redact
from kernelevo.llm.types import Completion, Prompt, Usage, estimate_tokens

log = logging.getLogger("kernelevo.llm")

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_MAX_RETRIES = 4
MAX_RETRY_AFTER_S = (
    60.0  # a server asking for longer is waited this long (the SDKs would wait any time)
)


@runtime_checkable
class Provider(Protocol):
    name: str
    model: str

    async def complete(
        self,
        prompt: Prompt,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        budget: Budget | None = None,
    ) -> Completion:
        """One completion. With a budget: reserve before, charge after (BudgetExhausted if it
        does not fit). max_tokens=None uses the model's settings; temperature=None sends none
        (some models reject non-default values)."""
        ...

    async def aclose(self) -> None: ...


@dataclass
class Failure:
    kind: str  # auth | not_found | rate_limit | server | timeout | connection | client
    message: str
    status: int | None = None
    request_id: str | None = None


@dataclass(frozen=True)
class ParsedReply:
    """What a provider's `_send` extracts from one successful response."""

    text: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    model: str
    request_id: str | None
    stop_reason: str | None


class SDKProvider:
    """Base of the Anthropic and OpenAI-compatible providers; subclasses build the client,
    send one request, and say which SDK exception classes mean what."""

    status_error: ClassVar[type[Exception]]
    timeout_error: ClassVar[type[Exception]]
    connection_error: ClassVar[type[Exception]]

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        max_concurrency: int = 4,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        prices: Mapping[str, Price] | None = None,
        default_price: Price | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self._endpoint = endpoint
        self.name = endpoint.provider
        self.model = endpoint.model
        self.base_url = endpoint.base_url
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.max_retries = max(0, max_retries)
        self.rate_limits = (
            0  # 429 answers seen (each retried by the SDK): the search keeps fewer requests open
        )
        self.settings = settings or ModelSettings()
        self._prices = dict(prices or {})
        self._default_price = default_price
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._retired: list[
            Any
        ] = []  # clients of ended loops, kept: freed in a new loop, they fail to close
        self._semaphore: asyncio.Semaphore | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"

    # -- subclass hooks -------------------------------------------------------------------
    def _new_client(self) -> Any:
        raise NotImplementedError

    async def _send(
        self, client: Any, prompt: Prompt, max_tokens: int, temperature: float | None
    ) -> ParsedReply:
        """One request (the SDK retries it); reads thinking/effort from `self.settings`."""
        raise NotImplementedError

    async def _not_found_hint(self, client: Any) -> str:
        return ""

    # -- public ---------------------------------------------------------------------------
    def price(self) -> tuple[Price | None, bool]:
        """The model's price and whether it is known (a default price is not)."""
        found = price_for(self.model, self._prices)
        return (found, True) if found else (self._default_price, False)

    def estimate(self, prompt: Prompt, max_tokens: int) -> tuple[int, float]:
        """Upper bounds of one call's tokens and dollars, for budget reservations."""
        est_in = estimate_tokens(prompt)
        price, _ = self.price()
        usd = (
            0.0 if price is None else (est_in * price.worst_input + max_tokens * price.output) / 1e6
        )
        return est_in + max_tokens, usd

    async def complete(
        self,
        prompt: Prompt,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        budget: Budget | None = None,
    ) -> Completion:
        max_tokens = max_tokens or self.settings.max_tokens
        reservation = (
            budget.reserve(*self.estimate(prompt, max_tokens)) if budget is not None else None
        )
        try:
            client, semaphore = self._bound()
            async with semaphore:
                completion = await self._call(client, prompt, max_tokens, temperature)
        except BaseException:
            if reservation is not None:
                budget.release(reservation)  # type: ignore[union-attr]
            raise
        if budget is not None:
            budget.charge(completion.usage, reservation)
        return completion

    async def aclose(self) -> None:
        client, self._client, self._loop = self._client, None, None
        if client is not None:
            await client.close()
        self._retired.clear()

    # -- machinery ------------------------------------------------------------------------
    def _bound(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._client is None:
            if self._client is not None:
                self._retired.append(self._client)
            self._loop = loop
            self._client = self._new_client()
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        assert self._semaphore is not None
        return self._client, self._semaphore

    def _event_hooks(self) -> dict[str, list[Any]]:
        """For the SDK's HTTP client: log each retryable answer, cap the wait it asks for."""
        name = self.name

        async def on_response(response: Any) -> None:
            status = response.status_code
            if status == 429:
                self.rate_limits += 1
            if status in (408, 409, 429) or status >= 500:
                for header, cap in (
                    ("retry-after-ms", MAX_RETRY_AFTER_S * 1000),
                    ("retry-after", MAX_RETRY_AFTER_S),
                ):
                    try:
                        if header in response.headers and float(response.headers[header]) > cap:
                            response.headers[header] = str(int(cap))
                    except ValueError:
                        pass
                log.warning(
                    "%s: HTTP %d from %s (retried by the SDK, up to %d times%s)",
                    name,
                    status,
                    redact(str(response.request.url.path)),
                    self.max_retries,
                    f", retry-after {response.headers['retry-after']} s"
                    if "retry-after" in response.headers
                    else "",
                )

        return {"response": [on_response]}

    def _usage(self, reply: ParsedReply) -> Usage:
        price, known = self.price()
        cost = (
            0.0
            if price is None
            else price.cost(
                reply.input_tokens,
                reply.output_tokens,
                reply.cache_read_tokens,
                reply.cache_write_tokens,
            )
        )
        return Usage(
            reply.input_tokens,
            reply.output_tokens,
            reply.cache_read_tokens,
            reply.cache_write_tokens,
            cost,
            known,
        )

    async def _call(
        self, client: Any, prompt: Prompt, max_tokens: int, temperature: float | None
    ) -> Completion:
        started = time.perf_counter()
        try:
            reply = await self._send(client, prompt, max_tokens, temperature)
        except (self.status_error, self.connection_error) as exc:
            raise await self._error(client, self._classify(exc), self.max_retries + 1) from None
        return Completion(
            reply.text,
            self._usage(reply),
            reply.model or self.model,
            self.name,
            reply.request_id,
            time.perf_counter() - started,
            reply.stop_reason,
        )

    def _classify(self, exc: Exception) -> Failure:
        if isinstance(exc, self.timeout_error):
            return Failure("timeout", f"no answer within {self.timeout_s:g} s")
        if not isinstance(exc, self.status_error):
            return Failure("connection", f"connection failed: {redact(str(exc))}")
        status = int(getattr(exc, "status_code", 0) or 0)
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        request_id = getattr(exc, "request_id", None) or (
            (headers.get("request-id") or headers.get("x-request-id"))
            if headers is not None
            else None
        )
        message = f"HTTP {status}: {_server_message(exc)}"
        if status in (401, 403):
            kind = "auth"
        elif status == 404:
            kind = "not_found"
        elif status == 429:
            kind = "rate_limit"
        elif status in (408, 409) or status >= 500:
            kind = "server"
        else:
            kind = "client"
        return Failure(kind, message, status, request_id)

    async def _error(self, client: Any, f: Failure, attempts: int) -> LLMError:
        kw: dict[str, Any] = {"provider": self.name, "status": f.status, "request_id": f.request_id}
        if f.kind == "auth":
            return AuthError(
                f"the API key for {self.name} was rejected ({f.message}, at {self.base_url}): "
                f"{self._endpoint.key_hint}",
                **kw,
            )
        if f.kind == "not_found":
            hint = await self._not_found_hint(client)
            return ModelNotFound(
                f"model {self.model!r} not found at {self.base_url} ({f.message}); check the model "
                f"name (--model) and the base URL (--base-url){hint}",
                **kw,
            )
        if f.kind == "rate_limit":
            return RateLimited(
                f"{self.name} still rate limited after {attempts} attempts ({f.message}); "
                f"lower the concurrency or try later",
                **kw,
            )
        if f.kind == "client":
            return LLMError(
                f"{self.name} refused the request for model {self.model!r} ({f.message})", **kw
            )
        return ProviderUnavailable(
            f"{self.name} at {self.base_url} failed after {attempts} attempts: {f.message}", **kw
        )


def _server_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return redact(inner["message"])[:500]
        if isinstance(inner, str):
            return redact(inner)[:500]
    return redact(str(getattr(exc, "message", "") or exc))[:500]
