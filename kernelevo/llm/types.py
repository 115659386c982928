"""The plain records the providers layer speaks: prompts in, completions and usage out.

Token accounting follows Anthropic's convention on every provider, so sums make sense
across providers: `input_tokens` counts only *uncached* input, and
`input_tokens + cache_read_tokens + cache_write_tokens + output_tokens` is every token
the call processed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

Role = Literal["user", "assistant"]


@dataclass(frozen=True)
class SystemPart:
    """One block of the system prompt; `cache=True` marks the stable prefix (task, reference)."""

    text: str
    cache: bool = False


@dataclass(frozen=True)
class Message:
    """One conversation turn; `cache=True` ends a cacheable prefix (Anthropic cache breakpoint)."""

    role: Role
    content: str
    cache: bool = False


@dataclass(frozen=True)
class Prompt:
    """System parts first (stable, cacheable), then alternating user/assistant turns."""

    system: tuple[SystemPart, ...] = ()
    messages: tuple[Message, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "system", tuple(self.system))
        object.__setattr__(self, "messages", tuple(self.messages))
        if not self.messages:
            raise ValueError("a prompt needs at least one message")
        for m in self.messages:
            if m.role not in ("user", "assistant"):
                raise ValueError(f"message role must be 'user' or 'assistant', not {m.role!r}")

    @classmethod
    def of(cls, user: str, *, system: str | None = None, reference: str | None = None) -> Prompt:
        """The common shape: instructions and the reference code cached, the request not."""
        parts = [SystemPart(text, cache=True) for text in (system, reference) if text]
        return cls(system=tuple(parts), messages=(Message("user", user),))


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cost_usd + other.cost_usd,
            self.cost_known and other.cost_known,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage
    model: str
    provider: str
    request_id: str | None = None
    latency_s: float = 0.0  # of the successful attempt (no queueing, no retries)
    stop_reason: str | None = None  # "max_tokens"/"length" means the text was cut off

    @property
    def truncated(self) -> bool:
        return self.stop_reason in ("max_tokens", "length")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["usage"] = self.usage.to_dict()
        return data


def request_hash(prompt: Prompt, model: str) -> str:
    """Stable across processes and versions: content only (cache marks do not change the answer)."""
    canonical = {
        "model": model,
        "system": [p.text for p in prompt.system],
        "messages": [[m.role, m.content] for m in prompt.messages],
    }
    blob = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def estimate_tokens(prompt: Prompt) -> int:
    """An upper-bound guess of input tokens (UTF-8 bytes / 3, plus framing), used for budget
    reservations; real tokenisers give ~3.5-4 bytes per token on code and English."""
    texts = [p.text for p in prompt.system] + [m.content for m in prompt.messages]
    return sum(-(-len(t.encode("utf-8")) // 3) + 8 for t in texts) + 16
