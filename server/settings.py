"""User settings: from `initializationOptions`, then `workspace/didChangeConfiguration`.

API keys never come from here: a workspace settings file is shared and committed, so a
key-like setting is dropped (and reported) instead of being passed to the search.
`searchCommand` replaces the `kernelevo optimize` command line; it is honoured only from
`initializationOptions` (set by the client, not by a workspace file), because it names a
program to run.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SECTION = "kernelevo"
_SECRET_HINTS = ("apikey", "api_key", "secret", "password", "token_value", "authtoken")
_BACKENDS = ("auto", "triton", "cuda")


@dataclass
class Settings:
    provider: str | None = None
    model: str | None = None
    budgetTokens: int | None = None
    budgetUsd: float | None = None
    iterations: int | None = None
    backend: str = "auto"
    gpu: int | None = None
    storePath: str | None = None
    diagnostics: bool = False
    maxJobsPerGpu: int = 1
    searchCommand: list[str] | None = field(default=None)

    def store_path(self, root: str | None) -> Path:
        """`storePath` (relative to the workspace root), else `$KERNELEVO_STORE`, else `.kernelevo/store.sqlite`."""
        if self.storePath:
            p = Path(os.path.expanduser(self.storePath))
            return p if p.is_absolute() else Path(root or os.getcwd()) / p
        env = os.environ.get("KERNELEVO_STORE")
        if env:
            return Path(env)
        return Path(root or os.getcwd()) / ".kernelevo" / "store.sqlite"


def _section(options: Any) -> dict[str, Any]:
    """Accept both `{"kernelevo": {...}}` and a flat `{...}`."""
    if not isinstance(options, dict):
        return {}
    inner = options.get(SECTION)
    return dict(inner) if isinstance(inner, dict) else dict(options)


def _coerce(name: str, value: Any, default: Any) -> Any:
    if value is None:
        return None
    if name in ("budgetTokens", "iterations", "gpu", "maxJobsPerGpu"):
        return int(value)
    if name == "budgetUsd":
        return float(value)
    if name == "diagnostics":
        return bool(value)
    if name == "backend":
        value = str(value)
        if value not in _BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(_BACKENDS)}")
        return value
    if name == "searchCommand":
        if isinstance(value, str):
            value = value.split()
        return [str(v) for v in value] or None
    return str(value)


def merge(current: Settings, options: Any, *, trusted: bool) -> tuple[Settings, list[str]]:
    """A copy of `current` updated from `options`; also the warnings to show the user.

    `trusted` is True for `initializationOptions` only (see module docstring).
    """
    values = _section(options)
    warnings: list[str] = []
    known = {f.name: f for f in dataclasses.fields(Settings)}
    updates: dict[str, Any] = {}
    for key, value in values.items():
        if any(h in key.lower().replace("-", "_") for h in _SECRET_HINTS):
            warnings.append(
                f"ignored setting '{key}': API keys come from the environment or the client's secret store"
            )
            continue
        if key not in known:
            continue
        if key == "searchCommand" and not trusted:
            if value:
                warnings.append(
                    "ignored 'searchCommand' from workspace settings: set it in initializationOptions"
                )
            continue
        try:
            coerced = _coerce(key, value, known[key].default)
        except (TypeError, ValueError) as exc:
            warnings.append(f"ignored setting '{key}': {exc}")
            continue
        if coerced is None and key in ("backend", "diagnostics", "maxJobsPerGpu"):
            continue
        updates[key] = coerced
    if updates.get("maxJobsPerGpu", 1) < 1:
        updates["maxJobsPerGpu"] = 1
    return dataclasses.replace(current, **updates), warnings
