"""The language-model providers layer of the search.

Async API: `provider = make_provider("anthropic", "claude-sonnet-5-5")`, then
`completion = await provider.complete(Prompt.of(user, system=..., reference=...), max_tokens=...,
budget=budget)` from as many asyncio tasks as wanted; each provider keeps at most
`max_concurrency` requests open. Importing this package imports none of its modules until a
name is used, so the store's redaction and the CLI's client stay cheap; the SDKs are imported
only when a provider is made.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# bound now: importing the submodule of the same name would otherwise shadow the function
from kernelevo.llm.redact import Secret, redact

if TYPE_CHECKING:
    from kernelevo.llm.budget import Budget, BudgetExhausted, Reservation
    from kernelevo.llm.errors import (
        AuthError,
        LLMError,
        ModelNotFound,
        ProviderUnavailable,
        RateLimited,
    )
    from kernelevo.llm.factory import make_provider
    from kernelevo.llm.model_settings import ModelSettings, settings_for
    from kernelevo.llm.provider import Provider
    from kernelevo.llm.provider_config import (
        KNOWN_PROVIDERS,
        OFFLINE,
        REPLAY,
        load_config,
        provider_names,
    )
    from kernelevo.llm.types import (
        Completion,
        Message,
        Prompt,
        SystemPart,
        Usage,
        estimate_tokens,
        request_hash,
    )

_MODULE_OF = {
    "Budget": "budget",
    "BudgetExhausted": "budget",
    "Reservation": "budget",
    "KNOWN_PROVIDERS": "provider_config",
    "OFFLINE": "provider_config",
    "REPLAY": "provider_config",
    "load_config": "provider_config",
    "provider_names": "provider_config",
    "AuthError": "errors",
    "LLMError": "errors",
    "ModelNotFound": "errors",
    "ProviderUnavailable": "errors",
    "RateLimited": "errors",
    "make_provider": "factory",
    "Provider": "provider",
    "ModelSettings": "model_settings",
    "settings_for": "model_settings",
    "Completion": "types",
    "Message": "types",
    "Prompt": "types",
    "SystemPart": "types",
    "Usage": "types",
    "estimate_tokens": "types",
    "request_hash": "types",
}


def __getattr__(name: str) -> Any:
    """The public name, imported from its module on first use."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'kernelevo.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kernelevo.llm.{module}"), name)
    globals()[name] = value
    return value


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
