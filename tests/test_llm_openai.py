"""OpenAI-compatible providers against a real HTTP server speaking chat completions."""

from __future__ import annotations

import asyncio

import pytest
from fakes import error, sent_key, serve_openai, slow, text
from fakes.env import clean_llm_env

from kernelevo.llm import AuthError, ModelNotFound, Prompt, ProviderUnavailable, make_provider
from kernelevo.llm.provider_config import LLMConfig

KEY = "sk-proj-test-8b3e1f0c5a"
PROMPT = Prompt.of(
    "Write a faster ModelNew.",
    system="You write Triton kernels.",
    reference="def forward(x):\n    return x.relu()\n" * 40,
)


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    clean_llm_env(monkeypatch, tmp_path)


def run(coro):
    return asyncio.run(coro)


def test_openai_success_normalises_cached_tokens_and_prices_them():
    with serve_openai(["first", "second"]) as server:
        p = make_provider(
            "openai", "gpt-4o", base_url=server.base_url, api_key=KEY, config=LLMConfig()
        )
        first = run(p.complete(PROMPT, max_tokens=300))
        second = run(p.complete(PROMPT, max_tokens=300))
    assert (first.text, first.provider, first.model, first.request_id) == (
        "first",
        "openai",
        "gpt-4o",
        "req_fake_1",
    )
    assert first.usage.cache_read_tokens == 0 and first.usage.cache_write_tokens == 0
    # the cached prefix is counted once, as a cache read, not also as input
    assert second.usage.cache_read_tokens > 0
    assert second.usage.input_tokens + second.usage.cache_read_tokens == first.usage.input_tokens
    u = second.usage
    assert u.cost_usd == pytest.approx(
        (u.input_tokens * 2.5 + u.cache_read_tokens * 1.25 + u.output_tokens * 10) / 1e6
    )
    body = server.requests[0].json
    assert body["messages"][0]["role"] == "system" and body["messages"][1] == {
        "role": "user",
        "content": "Write a faster ModelNew.",
    }
    assert (
        body["max_completion_tokens"] == 300
        and "max_tokens" not in body
        and "temperature" not in body
    )
    assert sent_key(server.requests[0]) == KEY


def test_local_servers_get_max_tokens_and_need_no_key():
    with serve_openai(["ok"], models=["qwen-coder"]) as server:
        p = make_provider("vllm", "qwen-coder", base_url=server.base_url, config=LLMConfig())
        c = run(p.complete(PROMPT, max_tokens=64, temperature=0.2))
    assert c.text == "ok" and c.provider == "vllm"
    assert not c.usage.cost_known and c.usage.cost_usd == 0.0
    body = server.requests[0].json
    assert body["max_tokens"] == 64 and body["temperature"] == 0.2


def test_deepseek_key_and_base_url_variables(monkeypatch):
    with serve_openai(["ok"]) as server:
        monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # must not apply to deepseek
        p = make_provider("deepseek")
        c = run(p.complete(PROMPT, max_tokens=16))
    assert c.model == "deepseek-chat" and c.usage.cost_known
    assert sent_key(server.requests[0]) == KEY


def test_openai_base_url_variable_is_honoured(monkeypatch):
    with serve_openai([text("via env")]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        assert (
            run(make_provider("openai", "gpt-5").complete(PROMPT, max_tokens=16)).text == "via env"
        )


def test_429_then_success_and_500_then_success():
    with serve_openai(
        [error(429, "slow down", retry_after=1), error(502, "bad gateway"), "done"]
    ) as server:
        p = make_provider(
            "openai", "gpt-4o", base_url=server.base_url, api_key=KEY, config=LLMConfig()
        )
        assert run(p.complete(PROMPT, max_tokens=16)).text == "done"
    assert len(server.requests) == 3


def test_timeout_then_success():
    with serve_openai([slow(2.0), "in time"]) as server:
        p = make_provider(
            "openai",
            "gpt-4o",
            base_url=server.base_url,
            api_key=KEY,
            config=LLMConfig(),
            timeout_s=0.3,
        )
        assert run(p.complete(PROMPT, max_tokens=16)).text == "in time"


def test_bad_key_is_auth_error_and_the_echoed_key_is_redacted():
    wrong = "sk-wrong-key-0123456789abcdef"
    with serve_openai(api_key="sk-the-right-one-42") as server:
        p = make_provider(
            "openai", "gpt-4o", base_url=server.base_url, api_key=wrong, config=LLMConfig()
        )
        with pytest.raises(AuthError) as info:
            run(p.complete(PROMPT, max_tokens=16))
    message = str(info.value)
    assert (
        "the API key for openai was rejected (HTTP 401: Incorrect API key provided: ***." in message
    )
    assert (
        "set OPENAI_API_KEY" in message and wrong not in message and wrong not in repr(info.value)
    )


def test_unknown_model_names_the_models_the_server_has():
    with serve_openai(models=["qwen-coder", "llama-3-70b"]) as server:
        p = make_provider("vllm", "qwen", base_url=server.base_url, config=LLMConfig())
        with pytest.raises(ModelNotFound) as info:
            run(p.complete(PROMPT, max_tokens=16))
    message = str(info.value)
    assert message.startswith(f"model 'qwen' not found at {server.base_url} (HTTP 404")
    assert message.endswith("models served there: llama-3-70b, qwen-coder")


def test_wrong_base_url_path_is_reported_as_model_not_found_with_the_url():
    with serve_openai() as server:
        p = make_provider("openai", "gpt-4o", base_url=server.url, api_key=KEY, config=LLMConfig())
        with pytest.raises(
            ModelNotFound, match=r"check the model name \(--model\) and the base URL"
        ):
            run(p.complete(PROMPT, max_tokens=16))


def test_server_down_after_retries():
    with serve_openai(default=error(500, "internal")) as server:
        p = make_provider(
            "openai",
            "gpt-4o",
            base_url=server.base_url,
            api_key=KEY,
            config=LLMConfig(),
            max_retries=2,
        )
        with pytest.raises(
            ProviderUnavailable, match="failed after 3 attempts: HTTP 500: internal"
        ):
            run(p.complete(PROMPT, max_tokens=16))
    assert len(server.requests) == 3


def test_openrouter_needs_a_model_and_its_own_key(monkeypatch):
    from kernelevo.llm import LLMError

    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    with pytest.raises(LLMError, match="provider 'openrouter' has no default model: pass --model"):
        make_provider("openrouter")
    with serve_openai(["ok"]) as server:
        p = make_provider("openrouter", "anthropic/claude-sonnet-4.5", base_url=server.base_url)
        c = run(p.complete(PROMPT, max_tokens=16))
    assert c.usage.cost_known  # priced as claude-sonnet-4-5
    assert sent_key(server.requests[0]) == KEY
