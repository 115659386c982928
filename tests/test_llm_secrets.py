"""API keys never reach logs, exception text, tracebacks or reprs."""

from __future__ import annotations

import asyncio
import logging
import pickle
import traceback

import pytest
from fakes import error, serve_anthropic, serve_openai
from fakes.env import clean_llm_env

from kernelevo.llm import AuthError, LLMError, Prompt, Secret, make_provider, redact
from kernelevo.llm.provider_config import LLMConfig

ANTHROPIC_KEY = "sk-ant-api03-SECRETSECRET-abcdef123456"
OPENAI_KEY = "sk-proj-SECRETSECRET-987654fedcba"
PROMPT = Prompt.of("hi", system="sys")


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    clean_llm_env(monkeypatch, tmp_path)


def _everything_about(exc: BaseException) -> str:
    return "\n".join(
        [str(exc), repr(exc), repr(exc.args), "".join(traceback.format_exception(exc))]
    )


def test_keys_never_appear_in_logs_errors_or_reprs(caplog, monkeypatch):
    caplog.set_level(logging.DEBUG)  # every logger, the SDKs' and httpx's included
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    seen: list[str] = []
    with serve_anthropic(
        ["ok", error(429), "ok", error(401, f"bad key {ANTHROPIC_KEY}")]
    ) as server:
        p = make_provider("anthropic", base_url=server.base_url)
        seen += [repr(p), str(p)]
        asyncio.run(p.complete(PROMPT, max_tokens=8))
        asyncio.run(p.complete(PROMPT, max_tokens=8))
        with pytest.raises(AuthError) as info:
            asyncio.run(p.complete(PROMPT, max_tokens=8))
        seen.append(_everything_about(info.value))
    with serve_openai(api_key="sk-the-right-key-000") as server:
        p = make_provider(
            "openai", "gpt-4o", base_url=server.base_url, api_key=OPENAI_KEY, config=LLMConfig()
        )
        seen.append(repr(p))
        with pytest.raises(AuthError) as info:  # the server echoes the key in its 401 message
            asyncio.run(p.complete(PROMPT, max_tokens=8))
        seen.append(_everything_about(info.value))
    assert any("HTTP 429" in r.getMessage() for r in caplog.records)  # the retry was logged
    text = caplog.text + "\n".join(seen)
    assert ANTHROPIC_KEY not in text and OPENAI_KEY not in text
    assert "SECRETSECRET" not in text


def test_missing_key_error_says_how_to_set_it_and_no_key_is_invented():
    with pytest.raises(AuthError) as info:
        make_provider("anthropic", config=LLMConfig())
    assert str(info.value).startswith(
        "no API key for anthropic: set ANTHROPIC_API_KEY or api_key under [providers.anthropic] in "
    )


def test_secret_and_redact():
    s = Secret("my-very-secret-value")
    assert "my-very-secret-value" not in repr(s) + str(s) + f"{s}"
    assert s.reveal() == "my-very-secret-value"
    with pytest.raises(TypeError):
        pickle.dumps(s)
    assert redact("key=my-very-secret-value!") == "key=***!"
    assert redact("token abcdefgh", secrets=["abcdefgh"]) == "token ***"
    assert redact("EMPTY", secrets=["EMPTY"]) == "EMPTY"  # placeholders too short to be keys
    assert "my-very-secret-value" not in str(LLMError("server said my-very-secret-value"))
