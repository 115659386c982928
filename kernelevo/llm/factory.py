"""`make_provider`: a provider name (and model) in, a ready Provider out."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kernelevo.llm.errors import LLMError
from kernelevo.llm.model_settings import ModelSettings, settings_for
from kernelevo.llm.provider import DEFAULT_TIMEOUT_S, Provider
from kernelevo.llm.provider_config import OFFLINE, REPLAY, LLMConfig, load_config, resolve_endpoint


def make_provider(
    name: str | None = None,
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    max_concurrency: int = 4,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_retries: int = 4,
    config: LLMConfig | None = None,
    settings: ModelSettings | None = None,
    replay_file: str | Path | None = None,
    record_to: str | Path | None = None,
) -> Provider:
    """Build the provider `name` ("anthropic" when neither it nor the config file names one).

    - "anthropic" and any provider of kind "anthropic" use the anthropic SDK; "openai",
      "openrouter", "deepseek", "vllm", "sglang", "ollama" and config-defined ones the openai SDK.
    - "replay" answers from `replay_file` (or $KERNELEVO_REPLAY_FILE); see kernelevo.llm.replay.
    - "offline" is the search's own proposer, not a language model: this raises LLMError for it,
      so callers handle "offline" before calling here.
    `max_retries`: retries after the first attempt, done by the SDK (backoff, retry-after honoured).
    `settings`: max_tokens, thinking and effort (default: the config file's [models."<model>"]).
    `record_to` appends every completion to a JSONL file that "replay" can read back.
    Raises AuthError when a provider that needs a key has none.
    """
    config = config if config is not None else load_config()
    name = name or config.provider or "anthropic"
    provider: Provider
    if name == OFFLINE:
        raise LLMError(
            "the 'offline' provider is the search's built-in proposer, not a language model: "
            "the search handles it without make_provider",
            provider=OFFLINE,
        )
    if name == REPLAY:
        from kernelevo.llm.replay import ReplayProvider

        path = replay_file or os.environ.get("KERNELEVO_REPLAY_FILE")
        if not path:
            raise LLMError(
                "the 'replay' provider needs a recorded JSONL file: pass replay_file or set "
                "KERNELEVO_REPLAY_FILE",
                provider=REPLAY,
            )
        provider = ReplayProvider(path, model)
    else:
        endpoint = resolve_endpoint(name, model, base_url=base_url, api_key=api_key, config=config)
        kwargs: dict[str, Any] = dict(  # the same for both SDK providers
            max_concurrency=max_concurrency,
            timeout_s=timeout_s,
            max_retries=max_retries,
            prices=config.prices,
            default_price=config.default_price,
            settings=settings or settings_for(endpoint.model, config.models),
        )
        if endpoint.kind == "anthropic":
            from kernelevo.llm.anthropic_provider import AnthropicProvider

            provider = AnthropicProvider(endpoint, **kwargs)
        else:
            from kernelevo.llm.openai_provider import OpenAIProvider

            provider = OpenAIProvider(endpoint, **kwargs)
    if record_to is not None:
        from kernelevo.llm.replay import RecordingProvider

        provider = RecordingProvider(provider, record_to)
    return provider
