"""The Anthropic provider against a real HTTP server speaking the Messages API."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from fakes import error, kernel_reply, sent_key, serve_anthropic, slow, text
from fakes.env import clean_llm_env

from kernelevo.llm import (
    AuthError,
    LLMError,
    ModelNotFound,
    ModelSettings,
    Prompt,
    ProviderUnavailable,
    RateLimited,
    make_provider,
)
from kernelevo.llm.provider_config import LLMConfig

KEY = "sk-ant-test-4f9c2a7d1e"
REFERENCE = (
    "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
    * 20
)
PROMPT = Prompt.of(
    "Write a faster ModelNew.", system="You write Triton kernels.", reference=REFERENCE
)


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    clean_llm_env(monkeypatch, tmp_path)


def provider(server, **kw):
    attempts = kw.pop("attempts", 4)
    return make_provider(
        "anthropic",
        kw.pop("model", "claude-sonnet-5-5"),
        base_url=server.base_url,
        api_key=KEY,
        max_retries=attempts - 1,
        config=LLMConfig(),
        **kw,
    )


def gaps(server):
    times = [r.received_at for r in server.posts()]
    return [b - a for a, b in itertools.pairwise(times)]


def run(coro):
    return asyncio.run(coro)


def test_success_records_usage_cost_and_sends_cache_control_and_key():
    with serve_anthropic([kernel_reply("class ModelNew: pass"), "again"]) as server:
        p = provider(server)
        first = run(p.complete(PROMPT, max_tokens=512))
        second = run(p.complete(PROMPT, max_tokens=512))
    assert "```python\nclass ModelNew: pass\n```" in first.text
    assert first.provider == "anthropic" and first.model == "claude-sonnet-5-5"
    assert (
        first.request_id == "req_fake_1" and first.stop_reason == "end_turn" and first.latency_s > 0
    )
    # the stable prefix was written to the cache by the first call and read by the second
    assert first.usage.cache_write_tokens > 100 and first.usage.cache_read_tokens == 0
    assert (
        second.usage.cache_read_tokens == first.usage.cache_write_tokens
        and second.usage.cache_write_tokens == 0
    )
    u = first.usage
    expected = (u.input_tokens * 2.0 + u.output_tokens * 10.0 + u.cache_write_tokens * 2.5) / 1e6
    assert u.cost_known and u.cost_usd == pytest.approx(expected)
    assert second.usage.cost_usd < first.usage.cost_usd
    body = server.requests[0].json
    assert body["model"] == "claude-sonnet-5-5" and body["max_tokens"] == 512
    assert [b.get("cache_control") for b in body["system"]] == [{"type": "ephemeral"}] * 2
    assert "cache_control" not in body["messages"][0]["content"][0]
    assert "temperature" not in body  # newer models reject non-default sampling parameters
    assert sent_key(server.requests[0]) == KEY
    assert server.requests[0].headers["anthropic-version"]


def test_temperature_is_sent_only_when_asked():
    with serve_anthropic(["ok"]) as server:
        run(provider(server).complete(PROMPT, max_tokens=16, temperature=0.7))
    assert server.requests[0].json["temperature"] == 0.7


def test_at_most_four_cache_breakpoints_the_last_ones():
    from kernelevo.llm.anthropic_provider import build_request
    from kernelevo.llm.types import Message, SystemPart

    prompt = Prompt(
        system=tuple(SystemPart(f"part {i}", cache=True) for i in range(4)),
        messages=(
            Message("user", "u1", cache=True),
            Message("assistant", "a"),
            Message("user", "u2"),
        ),
    )
    system, messages = build_request(prompt)
    assert "cache_control" not in system[0]
    assert all("cache_control" in b for b in system[1:])
    assert messages[0]["content"][0]["cache_control"] == {"type": "ephemeral"}


def test_429_is_retried_by_the_sdk_honouring_retry_after_seconds():
    with serve_anthropic([error(429, "slow down", retry_after=1), "done"]) as server:
        c = run(provider(server).complete(PROMPT, max_tokens=16))
    assert c.text == "done" and len(server.requests) == 2
    assert 1.0 <= gaps(server)[0] < 2.0


def test_retry_after_ms_is_really_waited():
    with serve_anthropic([error(429, retry_after_ms=150), "done"]) as server:
        assert run(provider(server).complete(PROMPT, max_tokens=16)).text == "done"
    assert 0.15 <= gaps(server)[0] < 1.0


def test_a_retry_after_of_an_hour_is_capped(monkeypatch):
    from kernelevo.llm import provider as base

    monkeypatch.setattr(base, "MAX_RETRY_AFTER_S", 0.2)
    with serve_anthropic([error(429, retry_after=3600), "done"]) as server:
        assert run(provider(server).complete(PROMPT, max_tokens=16)).text == "done"
    assert gaps(server)[0] < 1.5  # the SDK alone would have slept an hour


def test_500_and_529_are_retried():
    with serve_anthropic([error(500, "boom"), error(529, "overloaded"), "done"]) as server:
        c = run(provider(server).complete(PROMPT, max_tokens=16))
    assert c.text == "done" and len(server.requests) == 3


def test_timeout_is_retried():
    with serve_anthropic([slow(2.0, "too late"), "in time"]) as server:
        c = run(provider(server, timeout_s=0.3).complete(PROMPT, max_tokens=16))
    assert c.text == "in time" and len(server.requests) == 2


def test_timeouts_until_attempts_run_out_raise_provider_unavailable():
    with (
        serve_anthropic(default=slow(2.0)) as server,
        pytest.raises(
            ProviderUnavailable, match=r"failed after 2 attempts: no answer within 0.2 s"
        ),
    ):
        run(provider(server, timeout_s=0.2, attempts=2).complete(PROMPT, max_tokens=16))


def test_persistent_429_raises_rate_limited_after_bounded_attempts():
    with (
        serve_anthropic(default=error(429, "rate limited")) as server,
        pytest.raises(RateLimited, match="still rate limited after 3 attempts"),
    ):
        run(provider(server, attempts=3).complete(PROMPT, max_tokens=16))
    assert len(server.requests) == 3


def test_persistent_500_raises_provider_unavailable():
    with (
        serve_anthropic(default=error(503, "down")) as server,
        pytest.raises(ProviderUnavailable, match="HTTP 503: down") as info,
    ):
        run(provider(server, attempts=2).complete(PROMPT, max_tokens=16))
    assert info.value.status == 503 and info.value.request_id.startswith("req_fake_err_")


def test_connection_refused_raises_provider_unavailable():
    with serve_anthropic() as server:
        url = server.base_url
    p = make_provider("anthropic", base_url=url, api_key=KEY, config=LLMConfig(), max_retries=1)
    with pytest.raises(ProviderUnavailable, match="connection failed"):
        run(p.complete(PROMPT, max_tokens=16))


def test_401_is_an_auth_error_naming_the_variable_without_the_key():
    with serve_anthropic(api_key="the-right-key-123") as server, pytest.raises(AuthError) as info:
        run(provider(server).complete(PROMPT, max_tokens=16))
    message = str(info.value)
    assert message.startswith("the API key for anthropic was rejected (HTTP 401")
    assert "set ANTHROPIC_API_KEY" in message and KEY not in message
    assert len(server.requests) == 1  # not retried


def test_unknown_model_is_model_not_found():
    with (
        serve_anthropic(models=["claude-sonnet-5-5"]) as server,
        pytest.raises(ModelNotFound) as info,
    ):
        run(provider(server, model="claude-nonesuch").complete(PROMPT, max_tokens=16))
    assert f"model 'claude-nonesuch' not found at {server.base_url}" in str(info.value)
    assert len(server.posts()) == 1


def test_400_is_not_retried():
    with (
        serve_anthropic(
            [error(400, "prompt is too long: 1000000 tokens > 200000 maximum")]
        ) as server,
        pytest.raises(LLMError, match="prompt is too long") as info,
    ):
        run(provider(server).complete(PROMPT, max_tokens=16))
    assert type(info.value) is LLMError and info.value.status == 400 and len(server.requests) == 1


def test_max_tokens_stop_marks_the_completion_truncated():
    from fakes import Reply

    with serve_anthropic([Reply(text="def half", stop_reason="max_tokens")]) as server:
        c = run(provider(server).complete(PROMPT, max_tokens=4))
    assert c.truncated


def test_provider_survives_successive_event_loops():
    with serve_anthropic(["one", "two"]) as server:
        p = provider(server)
        assert run(p.complete(PROMPT, max_tokens=16)).text == "one"
        assert run(p.complete(PROMPT, max_tokens=16)).text == "two"


def test_sdk_base_url_variable_and_key_variable_are_used(monkeypatch):
    with serve_anthropic([text("via env")]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        p = make_provider("anthropic")
        assert p.model == "claude-sonnet-5-5"
        assert run(p.complete(PROMPT, max_tokens=16)).text == "via env"
    assert sent_key(server.requests[0]) == KEY


def test_thinking_and_effort_are_sent_and_the_thinking_block_is_not_the_answer():
    settings = ModelSettings(max_tokens=8192, thinking_tokens=4096, effort="high")
    with serve_anthropic(["the answer"]) as server:
        c = run(provider(server, settings=settings).complete(PROMPT))
    body = server.posts()[0].json
    assert (
        body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
        and body["max_tokens"] == 8192
    )
    assert body["output_config"] == {"effort": "high"}
    assert c.text == "the answer"


def test_settings_come_from_the_config_file_per_model():
    config = LLMConfig(models={"claude-sonnet-5-5": {"max_tokens": 20000, "thinking_tokens": 8000}})
    with serve_anthropic(["ok"]) as server:
        p = make_provider(
            "anthropic", "claude-sonnet-5-5", base_url=server.base_url, api_key=KEY, config=config
        )
        run(p.complete(PROMPT))
    assert server.posts()[0].json["max_tokens"] == 20000


def test_thinking_budget_leaving_no_room_for_the_answer_is_refused_with_the_fix():
    with pytest.raises(LLMError, match="raise it to at least 10048 for thinking_tokens=8000"):
        ModelSettings(max_tokens=8192, thinking_tokens=8000)


def test_the_fake_refuses_an_empty_text_block_like_the_real_api():
    from kernelevo.llm.types import Message

    empty_turn = Prompt(
        messages=(Message("user", "write it"), Message("assistant", ""), Message("user", "again"))
    )
    with (
        serve_anthropic(["never sent"]) as server,
        pytest.raises(LLMError, match="text content blocks must be non-empty") as info,
    ):
        run(provider(server).complete(empty_turn, max_tokens=16))
    assert info.value.status == 400


def test_empty_reply_is_an_empty_completion():
    with serve_anthropic([""]) as server:
        c = run(provider(server).complete(PROMPT, max_tokens=16))
    assert c.text == "" and server.posts()[0].json["messages"][0]["content"][0]["text"]
