"""Which provider `kernelevo optimize` uses when none is named."""

from fakes.env import clean_llm_env

from kernelevo.optimize import default_provider


def test_default_provider_follows_keys_and_config(tmp_path, monkeypatch):
    config = clean_llm_env(monkeypatch, tmp_path)
    assert default_provider() == "offline"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert default_provider() == "openai"
    monkeypatch.delenv("OPENAI_API_KEY")
    config.parent.mkdir(parents=True)
    config.write_text('[providers.anthropic]\napi_key = "sk-ant-from-config"\n')
    assert (
        default_provider() == "anthropic"
    )  # a key in the config file counts, not only the environment
