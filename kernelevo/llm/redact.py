"""Keeping API keys out of logs, exception text and reprs.

Keys are wrapped in `Secret` as soon as they are read, and every key the layer has seen
is registered so that `redact` can scrub it from any text (e.g. a server error message
that echoes the key back).
"""
from __future__ import annotations

import threading
from typing import Iterable

_lock = threading.Lock()
_known: set[str] = set()
MASK = "***"
_MIN_LEN = 6  # shorter "keys" (placeholders such as "EMPTY") would scrub ordinary words


class Secret:
    """A key that never shows itself: repr/str print a mask; `reveal()` is the one way out."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value
        register_secret(value)

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret('{MASK}')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self):  # never pickled into a worker or a record
        raise TypeError("a Secret cannot be pickled")


def register_secret(value: str) -> None:
    if value and len(value) >= _MIN_LEN:
        with _lock:
            _known.add(value)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every registered key (and any in `secrets`) replaced by a mask."""
    with _lock:
        candidates = _known | {s for s in secrets if s and len(s) >= _MIN_LEN}
    for secret in sorted(candidates, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text
