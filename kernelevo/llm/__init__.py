"""The language-model providers layer of the search.

Async API: `provider = make_provider("anthropic", "claude-sonnet-5-5")`, then
`completion = await provider.complete(Prompt.of(user, system=..., reference=...), max_tokens=...,
budget=budget)` from as many asyncio tasks as wanted; each provider keeps at most
`max_concurrency` requests open. Importing this package does not import the SDKs.
"""

from __future__ import annotations

from kernelevo.llm.budget import Budget, BudgetExhausted, Reservation
from kernelevo.llm.config import KNOWN_PROVIDERS, OFFLINE, REPLAY, load_config, provider_names
from kernelevo.llm.errors import (
    AuthError,
    LLMError,
    ModelNotFound,
    ProviderUnavailable,
    RateLimited,
)
from kernelevo.llm.factory import make_provider
from kernelevo.llm.provider import Provider
from kernelevo.llm.redact import Secret, redact
from kernelevo.llm.settings import ModelSettings, settings_for
from kernelevo.llm.types import (
    Completion,
    Message,
    Prompt,
    SystemPart,
    Usage,
    estimate_tokens,
    request_hash,
)

__all__ = [
    "KNOWN_PROVIDERS",
    "OFFLINE",
    "REPLAY",
    "AuthError",
    "Budget",
    "BudgetExhausted",
    "Completion",
    "LLMError",
    "Message",
    "ModelNotFound",
    "ModelSettings",
    "Prompt",
    "Provider",
    "ProviderUnavailable",
    "RateLimited",
    "Reservation",
    "Secret",
    "SystemPart",
    "Usage",
    "estimate_tokens",
    "load_config",
    "make_provider",
    "provider_names",
    "redact",
    "request_hash",
    "settings_for",
]
