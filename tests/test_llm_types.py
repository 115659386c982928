"""Prompt, Usage and Completion records; the token estimate budgets rely on."""

from __future__ import annotations

import pytest
from fakes.scripted_server import approx_tokens

from kernelevo.llm import (
    Completion,
    Message,
    Prompt,
    Provider,
    SystemPart,
    Usage,
    estimate_tokens,
    make_provider,
)
from kernelevo.llm.provider_config import LLMConfig


def test_prompt_needs_messages_with_known_roles():
    with pytest.raises(ValueError, match="at least one message"):
        Prompt(system=(SystemPart("s"),))
    with pytest.raises(ValueError, match="role must be"):
        Prompt(messages=(Message("system", "x"),))  # type: ignore[arg-type]
    p = Prompt.of("do it", system="rules", reference="code")
    assert [(s.text, s.cache) for s in p.system] == [("rules", True), ("code", True)]
    assert p.messages == (Message("user", "do it"),)
    assert Prompt(system=[SystemPart("a")], messages=[Message("user", "b")]).system == (
        SystemPart("a"),
    )


def test_estimate_is_an_upper_bound_of_real_token_counts():
    code = "def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    pid = tl.program_id(0)\n" * 200
    p = Prompt.of("optimise", system="You are a GPU expert.", reference=code)
    assert estimate_tokens(p) >= approx_tokens(code) * 1.3  # ~3 bytes/token vs real ~3.5-4
    assert estimate_tokens(Prompt.of("é" * 30)) >= 20  # counts UTF-8 bytes, not characters


def test_usage_and_completion_records():
    u = Usage(10, 20, 30, 40, 0.5)
    assert u.total_tokens == 100
    assert Usage.from_dict({**u.to_dict(), "unknown_field": 1}) == u
    c = Completion("t", u, "m", "anthropic", "req_1", 0.1, "max_tokens")
    assert c.truncated and c.to_dict()["usage"]["cache_write_tokens"] == 40
    assert not Completion("t", u, "m", "openai", stop_reason="stop").truncated


def test_every_provider_kind_satisfies_the_protocol(tmp_path):
    replay = tmp_path / "r.jsonl"
    replay.write_text('{"text": "x"}\n')
    cfg = LLMConfig()
    for p in (
        make_provider("anthropic", api_key="k" * 10, config=cfg),
        make_provider("vllm", "m", config=cfg),
        make_provider("replay", replay_file=replay, config=cfg),
    ):
        assert isinstance(p, Provider)
