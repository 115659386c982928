"""Which endpoint, model and key a provider name means: built-in table, environment, config file.

Precedence, highest first:
  key:      api_key argument > the provider's key variable (ANTHROPIC_API_KEY, ...) > config file
  base URL: base_url argument (--base-url) > the provider's URL variable (ANTHROPIC_BASE_URL,
            OPENAI_BASE_URL, ...) > config file > the provider's known URL
  model:    model argument > config file ([providers.X] model, then top-level model) > built-in default

Config file: $KERNELEVO_CONFIG, else $XDG_CONFIG_HOME/kernelevo/config.toml (~/.config/...):

    provider = "anthropic"            # default provider name
    model = "claude-sonnet-5-5"       # default model
    [providers.anthropic]
    api_key = "..."                   # prefer the environment; the file should be chmod 600
    [providers.mybox]                 # any OpenAI-compatible server under a name of your own
    kind = "openai"
    base_url = "http://gpu-box:8000/v1"
    api_key_env = "MYBOX_KEY"
    model = "Qwen/Qwen3-Coder-30B"
    [prices."Qwen/Qwen3-Coder-30B"]   # USD per million tokens
    input = 0.0
    output = 0.0
    [default_price]                   # prices models the table does not know (cost_known stays False)
    input = 1.0
    output = 5.0
    [models."claude-opus-5"]          # per model: reply size, thinking budget, effort (llm/model_settings.py)
    max_tokens = 32000
    thinking_tokens = 16000
    effort = "high"

TOML needs `tomllib` (Python 3.11+) or the `tomli` package on 3.10; without either, a config
file at the default place is ignored with a warning (the environment still works), and one
named by KERNELEVO_CONFIG is an error.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kernelevo.llm.errors import AuthError, LLMError
from kernelevo.llm.prices import Price
from kernelevo.llm.redact import Secret
from kernelevo.text_file import TextFileError, file_problem, read_text

log = logging.getLogger("kernelevo.llm")

Kind = Literal["anthropic", "openai"]
OFFLINE = "offline"
REPLAY = "replay"
NO_KEY = "EMPTY"  # what local OpenAI-compatible servers accept when they check no key


@dataclass(frozen=True)
class ProviderSpec:
    name: str
    kind: Kind
    key_env: str | None
    base_url_env: str | None
    default_base_url: str
    default_model: str | None = None
    key_required: bool = True


KNOWN_PROVIDERS: dict[str, ProviderSpec] = {
    s.name: s
    for s in (
        ProviderSpec(
            "anthropic",
            "anthropic",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "https://api.anthropic.com",
            "claude-sonnet-5-5",
        ),
        ProviderSpec(
            "openai",
            "openai",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "https://api.openai.com/v1",
            "gpt-5",
        ),
        ProviderSpec(
            "openrouter",
            "openai",
            "OPENROUTER_API_KEY",
            "OPENROUTER_BASE_URL",
            "https://openrouter.ai/api/v1",
        ),
        ProviderSpec(
            "deepseek",
            "openai",
            "DEEPSEEK_API_KEY",
            "DEEPSEEK_BASE_URL",
            "https://api.deepseek.com",
            "deepseek-chat",
        ),
        ProviderSpec(
            "vllm",
            "openai",
            "VLLM_API_KEY",
            "VLLM_BASE_URL",
            "http://localhost:8000/v1",
            key_required=False,
        ),
        ProviderSpec(
            "sglang",
            "openai",
            "SGLANG_API_KEY",
            "SGLANG_BASE_URL",
            "http://localhost:30000/v1",
            key_required=False,
        ),
        ProviderSpec(
            "ollama",
            "openai",
            "OLLAMA_API_KEY",
            "OLLAMA_BASE_URL",
            "http://localhost:11434/v1",
            key_required=False,
        ),
    )
}


@dataclass
class LLMConfig:
    path: Path | None = None
    provider: str | None = None
    model: str | None = None
    providers: dict[str, dict[str, Any]] = field(default_factory=dict)
    prices: dict[str, Price] = field(default_factory=dict)
    default_price: Price | None = None
    models: dict[str, dict[str, Any]] = field(
        default_factory=dict
    )  # [models."<model>"]: see llm/model_settings.py


@dataclass(frozen=True)
class Endpoint:
    """Everything needed to build a client; `key_hint` says how to fix a missing/rejected key."""

    provider: str
    kind: Kind
    model: str
    base_url: str
    api_key: Secret
    key_hint: str


def config_path() -> Path:
    explicit = os.environ.get("KERNELEVO_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kernelevo" / "config.toml"


def _load_toml(path: Path) -> dict[str, Any] | None:
    try:
        import tomllib as toml  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as toml  # type: ignore[import-not-found,no-redef]
        except ModuleNotFoundError:
            if os.environ.get("KERNELEVO_CONFIG"):
                raise LLMError(
                    f"{path}: reading TOML on Python 3.10 needs the 'tomli' package (pip install tomli)"
                ) from None
            log.warning("%s ignored: reading TOML on Python 3.10 needs the 'tomli' package", path)
            return None
    try:
        return toml.loads(read_text(path, keep_newlines=True))
    except TextFileError as exc:
        named = "KERNELEVO_CONFIG" if os.environ.get("KERNELEVO_CONFIG") else "config file"
        raise LLMError(f"{named}: {exc}") from None
    except toml.TOMLDecodeError as exc:
        raise LLMError(f"{path}: invalid TOML: {exc}") from None


def _price(path: Path, where: str, data: Any) -> Price:
    if not isinstance(data, dict) or "input" not in data or "output" not in data:
        raise LLMError(
            f"{path}: [{where}] needs numbers 'input' and 'output' (USD per million tokens)"
        )
    try:
        return Price(
            float(data["input"]),
            float(data["output"]),
            None if data.get("cache_read") is None else float(data["cache_read"]),
            None if data.get("cache_write") is None else float(data["cache_write"]),
        )
    except (TypeError, ValueError):
        raise LLMError(f"{path}: [{where}] prices must be numbers") from None


def load_config(path: Path | str | None = None) -> LLMConfig:
    """The config file's LLM settings; an empty config when there is no file."""
    path = Path(path) if path is not None else config_path()
    problem = file_problem(path)
    if problem:
        if os.environ.get("KERNELEVO_CONFIG") and path == config_path():
            if not path.exists():
                raise LLMError(f"{path}: KERNELEVO_CONFIG names a file that does not exist")
            raise LLMError(f"KERNELEVO_CONFIG: {problem}")
        return LLMConfig()
    data = _load_toml(path)
    if data is None:
        return LLMConfig()
    providers = data.get("providers", {})
    if not isinstance(providers, dict) or not all(isinstance(v, dict) for v in providers.values()):
        raise LLMError(f"{path}: [providers.<name>] entries must be tables")
    if any("api_key" in v for v in providers.values()):
        try:
            if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                log.warning(
                    "%s holds an API key and is readable by other users: chmod 600 it", path
                )
        except OSError:
            pass
    prices_raw = data.get("prices", {})
    if not isinstance(prices_raw, dict):
        raise LLMError(f'{path}: [prices."<model>"] entries must be tables')
    prices = {name: _price(path, f'prices."{name}"', v) for name, v in prices_raw.items()}
    default = data.get("default_price")
    models = data.get("models", {})
    if not isinstance(models, dict) or not all(isinstance(v, dict) for v in models.values()):
        raise LLMError(
            f'{path}: [models."<model>"] entries must be tables (max_tokens, thinking_tokens, effort)'
        )
    for key in ("provider", "model"):
        if key in data and not isinstance(data[key], str):
            raise LLMError(f"{path}: '{key}' must be a string")
    return LLMConfig(
        path=path,
        provider=data.get("provider"),
        model=data.get("model"),
        providers={k: dict(v) for k, v in providers.items()},
        prices=prices,
        default_price=_price(path, "default_price", default) if default is not None else None,
        models={k: dict(v) for k, v in models.items()},
    )


def provider_names(config: LLMConfig | None = None) -> list[str]:
    names = [*KNOWN_PROVIDERS, OFFLINE, REPLAY]
    return names + sorted(n for n in (config.providers if config else {}) if n not in names)


def check_provider(name: str, config: LLMConfig | None = None) -> None:
    """LLMError, saying what to choose, for a provider that is neither known nor configured: checked
    before a search starts anything."""
    config = config or LLMConfig()
    if name not in provider_names(config):
        raise _unknown_provider(name, config)


def _unknown_provider(name: str, config: LLMConfig) -> LLMError:
    return LLMError(
        f"unknown provider {name!r}: choose one of {', '.join(provider_names(config))}, "
        f"or define [providers.{name}] in {config.path or config_path()}"
    )


def resolve_endpoint(
    name: str,
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    config: LLMConfig | None = None,
) -> Endpoint:
    config = config or LLMConfig()
    section = config.providers.get(name, {})
    spec = KNOWN_PROVIDERS.get(name)
    if spec is None:
        if not section:
            raise _unknown_provider(name, config)
        kind = section.get("kind", "openai")
        if kind not in ("anthropic", "openai"):
            raise LLMError(
                f"{config.path}: [providers.{name}] kind must be 'anthropic' or 'openai'"
            )
        if not section.get("base_url"):
            raise LLMError(f"{config.path}: [providers.{name}] needs a base_url")
        spec = ProviderSpec(
            name,
            kind,
            section.get("api_key_env"),
            None,
            section["base_url"],
            key_required=bool(section.get("api_key_env") or section.get("api_key")),
        )
    key_env = section.get("api_key_env") or spec.key_env
    url = (
        base_url
        or (os.environ.get(spec.base_url_env) if spec.base_url_env else None)
        or section.get("base_url")
        or spec.default_base_url
    )
    chosen_model = (
        model
        or section.get("model")
        or (config.model if config.provider in (None, name) else None)
        or spec.default_model
    )
    if not chosen_model:
        raise LLMError(
            f"provider {name!r} has no default model: pass --model (the model name {url} serves)"
        )
    where = config.path or config_path()
    hint = (
        f"set {key_env}" if key_env else "pass an API key"
    ) + f" or api_key under [providers.{name}] in {where}"
    key = api_key or (os.environ.get(key_env) if key_env else None) or section.get("api_key")
    if not key:
        if spec.key_required:
            raise AuthError(f"no API key for {name}: {hint}", provider=name)
        key = NO_KEY
    return Endpoint(name, spec.kind, chosen_model, url.rstrip("/"), Secret(key), hint)
