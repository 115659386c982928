"""Custom requests' params arrive from pygls as nested namedtuples; handlers want dicts."""

from __future__ import annotations

from typing import Any


def plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def as_dict(params: Any) -> dict[str, Any]:
    got = plain(params)
    return got if isinstance(got, dict) else {}
