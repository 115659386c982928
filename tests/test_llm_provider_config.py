"""Provider selection: names, keys and base URLs from arguments, environment and config file; prices."""

from __future__ import annotations

import asyncio
import logging
import os

import pytest
from fakes import sent_key, serve_openai
from fakes.env import clean_llm_env

from kernelevo.llm import AuthError, LLMError, Prompt, Usage, make_provider, provider_names
from kernelevo.llm.prices import Price, price_for
from kernelevo.llm.provider_config import load_config, resolve_endpoint

PROMPT = Prompt.of("hi")


@pytest.fixture
def config_file(monkeypatch, tmp_path):
    return clean_llm_env(monkeypatch, tmp_path)


def write(path, body: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    os.chmod(path, 0o600)
    return path


def test_default_config_file_supplies_provider_model_and_key(config_file):
    write(
        config_file,
        'provider = "anthropic"\nmodel = "claude-opus-5"\n'
        '[providers.anthropic]\napi_key = "sk-ant-from-file-123"\n',
    )
    p = make_provider()
    assert (p.name, p.model, p.base_url) == (
        "anthropic",
        "claude-opus-5",
        "https://api.anthropic.com",
    )
    assert p._endpoint.api_key.reveal() == "sk-ant-from-file-123"


def test_environment_beats_config_file_and_arguments_beat_both(config_file, monkeypatch):
    write(
        config_file,
        '[providers.anthropic]\napi_key = "sk-ant-from-file-123"\nbase_url = "http://file:1"\n',
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env-456")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://env:2")
    e = resolve_endpoint("anthropic", config=load_config())
    assert (e.api_key.reveal(), e.base_url) == ("sk-ant-from-env-456", "http://env:2")
    e = resolve_endpoint(
        "anthropic", base_url="http://arg:3/", api_key="sk-ant-arg-789", config=load_config()
    )
    assert (e.api_key.reveal(), e.base_url) == ("sk-ant-arg-789", "http://arg:3")


def test_kernelevo_config_names_another_file(config_file, monkeypatch, tmp_path):
    other = write(
        tmp_path / "elsewhere.toml",
        'provider = "deepseek"\n[providers.deepseek]\napi_key = "sk-ds-999999"\n',
    )
    monkeypatch.setenv("KERNELEVO_CONFIG", str(other))
    p = make_provider()
    assert (p.name, p.model) == ("deepseek", "deepseek-chat")
    monkeypatch.setenv("KERNELEVO_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(LLMError, match="KERNELEVO_CONFIG names a file that does not exist"):
        make_provider()


def test_a_config_file_that_is_not_text_or_not_a_file_is_named(config_file, monkeypatch, tmp_path):
    """A binary or non-UTF-8 KERNELEVO_CONFIG failed as `optimize failed: UnicodeDecodeError`,
    naming no file; a FIFO there would block the read."""
    binary = tmp_path / "config.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    monkeypatch.setenv("KERNELEVO_CONFIG", str(binary))
    with pytest.raises(LLMError) as exc:
        load_config()
    assert str(exc.value) == (
        f"KERNELEVO_CONFIG: {binary}: not UTF-8 text (byte 0x89 on line 1); save it as UTF-8"
    )
    os.mkfifo(tmp_path / "fifo.toml")
    monkeypatch.setenv("KERNELEVO_CONFIG", str(tmp_path / "fifo.toml"))
    with pytest.raises(LLMError, match=r"^KERNELEVO_CONFIG: .*fifo\.toml is not a regular file"):
        load_config()
    monkeypatch.setenv("KERNELEVO_CONFIG", str(tmp_path))
    with pytest.raises(LLMError, match=r"^KERNELEVO_CONFIG: .* is a folder, not a file"):
        load_config()
    monkeypatch.delenv("KERNELEVO_CONFIG")
    config_file.parent.mkdir(parents=True)
    config_file.write_bytes(b"provider = 'caf\xe9'\n")
    with pytest.raises(LLMError, match=r"^config file: .*config\.toml: not UTF-8 text"):
        load_config()


def test_custom_openai_compatible_provider_from_config(config_file, monkeypatch):
    with serve_openai(["from my box"], models=["Qwen/Qwen3-Coder"]) as server:
        write(
            config_file,
            f'[providers.mybox]\nkind = "openai"\nbase_url = "{server.base_url}"\n'
            f'api_key_env = "MYBOX_KEY"\nmodel = "Qwen/Qwen3-Coder"\n'
            f'[prices."Qwen/Qwen3-Coder"]\ninput = 1.0\noutput = 2.0\n',
        )
        monkeypatch.setenv("MYBOX_KEY", "mybox-key-31337")
        assert "mybox" in provider_names(load_config())
        p = make_provider("mybox")
        c = asyncio.run(p.complete(PROMPT, max_tokens=8))
    assert c.text == "from my box" and c.usage.cost_known
    assert c.usage.cost_usd == pytest.approx(
        (c.usage.input_tokens * 1.0 + c.usage.output_tokens * 2.0) / 1e6
    )
    assert sent_key(server.requests[0]) == "mybox-key-31337"


def test_default_price_prices_unknown_models_but_cost_stays_unknown(config_file):
    with serve_openai(["ok"]) as server:
        write(config_file, "[default_price]\ninput = 1.0\noutput = 1.0\n")
        p = make_provider("vllm", "some-local-model", base_url=server.base_url)
        c = asyncio.run(p.complete(PROMPT, max_tokens=8))
    assert c.usage.cost_usd > 0 and c.usage.cost_known is False


def test_bad_config_is_a_clear_error(config_file):
    write(config_file, "provider = [\n")
    with pytest.raises(LLMError, match=r"config.toml: invalid TOML"):
        make_provider()
    write(config_file, '[prices."m"]\ninput = "cheap"\noutput = 1\n')
    with pytest.raises(LLMError, match=r'\[prices."m"\] prices must be numbers'):
        make_provider()


def test_world_readable_config_with_a_key_is_warned_about(config_file, caplog):
    write(config_file, '[providers.anthropic]\napi_key = "sk-ant-from-file-123"\n')
    os.chmod(config_file, 0o644)
    with caplog.at_level(logging.WARNING, logger="kernelevo.llm"):
        load_config()
    assert "readable by other users: chmod 600 it" in caplog.text


def test_unknown_offline_and_replay_names(config_file):
    with pytest.raises(
        LLMError, match="unknown provider 'nope': choose one of anthropic, openai, openrouter"
    ):
        make_provider("nope")
    with pytest.raises(LLMError, match="'offline' provider is the search's built-in proposer"):
        make_provider("offline")
    with pytest.raises(LLMError, match="the 'replay' provider needs a recorded JSONL file"):
        make_provider("replay")


def test_missing_key_for_keyed_providers_only(config_file):
    for name, var in [
        ("openai", "OPENAI_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
        ("deepseek", "DEEPSEEK_API_KEY"),
    ]:
        with pytest.raises(AuthError, match=f"no API key for {name}: set {var}"):
            make_provider(name, "m")
    for name in ("vllm", "sglang", "ollama"):
        assert make_provider(name, "m").name == name


def test_price_lookup_and_cost():
    assert price_for("claude-opus-4-1-20250805") == price_for("claude-opus-4-1")
    assert price_for("anthropic/claude-sonnet-4.5") == price_for("claude-sonnet-4-5")
    assert price_for("gpt-4o-mini-2024-07-18").input == 0.15
    assert price_for("claude-opus-4-9") is None  # not a snapshot of claude-opus-4
    assert price_for("mine", {"mine": Price(1, 2)}) == Price(1, 2)
    p = price_for("claude-sonnet-5-5")
    assert p.cost(1_000_000, 1_000_000, 1_000_000, 1_000_000) == pytest.approx(2 + 10 + 0.2 + 2.5)
    assert Usage(1, 2, 3, 4, 0.5) + Usage(1, 1, 1, 1, 0.25, cost_known=False) == Usage(
        2, 3, 4, 5, 0.75, False
    )


def test_without_a_toml_parser_the_default_file_is_ignored_and_an_explicit_one_is_an_error(
    config_file, monkeypatch, caplog
):
    import sys

    monkeypatch.setitem(sys.modules, "tomllib", None)  # as on Python 3.10 without tomli
    monkeypatch.setitem(sys.modules, "tomli", None)
    write(config_file, 'provider = "deepseek"\n')
    with caplog.at_level(logging.WARNING, logger="kernelevo.llm"):
        assert load_config().provider is None
    assert "needs the 'tomli' package" in caplog.text
    monkeypatch.setenv("KERNELEVO_CONFIG", str(config_file))
    with pytest.raises(LLMError, match=r"reading TOML on Python 3.10 needs the 'tomli' package"):
        load_config()
