"""How much a model may write and think per call, set per model in the config file and on the
command line (which wins):

    [models."claude-opus-5"]
    max_tokens = 32000        # the whole reply, thinking included (Anthropic counts it there)
    thinking_tokens = 16000   # extended thinking budget; omit for none
    effort = "high"           # reasoning effort where the API has it (Anthropic effort, OpenAI reasoning_effort)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kernelevo.llm.errors import LLMError

DEFAULT_MAX_TOKENS = 16384
MIN_ANSWER_TOKENS = 2048
EFFORTS = ("low", "medium", "high", "max")


@dataclass(frozen=True)
class ModelSettings:
    max_tokens: int = DEFAULT_MAX_TOKENS
    thinking_tokens: int | None = None
    effort: str | None = None

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise LLMError(f"max_tokens must be positive, not {self.max_tokens}")
        if self.effort is not None and self.effort not in EFFORTS:
            raise LLMError(f"effort must be one of {', '.join(EFFORTS)}, not {self.effort!r}")
        if self.thinking_tokens is not None:
            if self.thinking_tokens < 1024:
                raise LLMError(
                    f"thinking_tokens must be at least 1024 (got {self.thinking_tokens}); omit it for no "
                    "extended thinking"
                )
            if self.max_tokens - self.thinking_tokens < MIN_ANSWER_TOKENS:
                raise LLMError(
                    f"max_tokens ({self.max_tokens}) counts the thinking too: raise it to at least "
                    f"{self.thinking_tokens + MIN_ANSWER_TOKENS} for thinking_tokens={self.thinking_tokens}, "
                    "so the answer has room"
                )


def settings_for(model: str, table: dict[str, dict[str, Any]], **overrides: Any) -> ModelSettings:
    """The config file's `[models."<model>"]` settings, then the non-None overrides (the CLI's)."""
    raw = dict(table.get(model) or {})
    unknown = set(raw) - {"max_tokens", "thinking_tokens", "effort"}
    if unknown:
        raise LLMError(
            f'[models."{model}"]: unknown setting(s) {", ".join(sorted(unknown))}; '
            "known: max_tokens, thinking_tokens, effort"
        )
    base = ModelSettings(**raw) if raw else ModelSettings()
    chosen = {k: v for k, v in overrides.items() if v is not None}
    if (
        chosen.get("max_tokens") is None
        and chosen.get("thinking_tokens")
        and "max_tokens" not in raw
    ):
        chosen["max_tokens"] = max(base.max_tokens, chosen["thinking_tokens"] + DEFAULT_MAX_TOKENS)
    return replace(base, **chosen) if chosen else base
