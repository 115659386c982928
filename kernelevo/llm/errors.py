"""Errors the providers layer raises; every message passes through `redact` first."""

from __future__ import annotations

from kernelevo.llm.redact import redact


class LLMError(Exception):
    """A call to a language model failed in a way retrying will not fix (or retries ran out)."""

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(redact(message))
        self.provider = provider
        self.status = status
        self.request_id = request_id


class AuthError(LLMError):
    """No key, or the key was rejected (401/403)."""


class ModelNotFound(LLMError):
    """The endpoint does not serve the requested model (404)."""


class RateLimited(LLMError):
    """Still rate limited (429) after every retry."""


class ProviderUnavailable(LLMError):
    """5xx, timeouts or connection failures after every retry."""
