"""Isolating a test from the developer's real LLM settings (keys, base URLs, config file)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

_PREFIXES = (
    "ANTHROPIC_",
    "OPENAI_",
    "OPENROUTER_",
    "DEEPSEEK_",
    "VLLM_",
    "SGLANG_",
    "OLLAMA_",
    "KERNELEVO_",
)


def clean_llm_env(monkeypatch: Any, tmp_path: Path) -> Path:
    """Drop every provider variable and point the config file at an empty folder; returns the
    path a config file would be read from ($XDG_CONFIG_HOME/kernelevo/config.toml)."""
    for name in list(os.environ):
        if name.startswith(_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "kernelevo" / "config.toml"
