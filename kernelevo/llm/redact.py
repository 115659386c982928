"""Keeping API keys out of logs, exception text, reprs and the store.

Keys are wrapped in `Secret` as soon as they are read, and every key the layer has seen
is registered so that `redact` can scrub it from any text (e.g. a server error message
that echoes the key back). A candidate that somehow learnt a key would not print it
plainly, so the simple encodings are scrubbed too: reversed, base64 (every alignment in a
longer base64 text, standard and URL alphabets) and hex.
"""

from __future__ import annotations

import base64
import os
import re
import threading
from collections.abc import Iterable

_lock = threading.Lock()
_known: set[str] = set()
_forms: dict[str, frozenset[str]] = {}
_MIN_ENCODED = 8  # an encoded fragment shorter than this would match ordinary text
_KEY_VARIABLE = re.compile(r"API_?KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
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
            _forms.setdefault(value, encoded_forms(value))


def register_environment_secrets(environ: dict[str, str] | None = None) -> None:
    """Register the values of variables named like keys (`*_API_KEY`, `*_TOKEN`, ...) so the
    store redacts them even when no provider was built in this process."""
    for name, value in (os.environ if environ is None else environ).items():
        if _KEY_VARIABLE.search(name) and len(value) >= 12:
            register_secret(value)


def encoded_forms(secret: str) -> frozenset[str]:
    """The key, reversed, and the fragments of its base64 and hex encodings that appear in
    any text encoding it, wherever it starts (base64 mixes a value with its neighbours at
    the edges, so each alignment keeps only the characters the key alone decides)."""
    forms = {secret}
    for value in (secret, secret[::-1]):
        forms.add(value)
        raw = value.encode()
        forms.update((raw.hex(), raw.hex().upper()))
        for shift in range(3):
            encoded = base64.b64encode(b"\0" * shift + raw).decode()
            start = 4 if shift else 0
            end = ((shift + len(raw)) // 3) * 4
            middle = encoded[start:end]
            if len(middle) >= _MIN_ENCODED:
                forms.update((middle, middle.replace("+", "-").replace("/", "_")))
    return frozenset(f for f in forms if len(f) >= _MIN_LEN)


def _all_forms(secrets: Iterable[str]) -> list[str]:
    with _lock:
        forms = set().union(*_forms.values()) if _forms else set()
    for s in secrets:
        if s and len(s) >= _MIN_LEN:
            forms |= encoded_forms(s)
    return sorted(forms, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every registered key (and any in `secrets`), plain or encoded, masked."""
    if not text:
        return text
    for form in _all_forms(secrets):
        if form in text:
            text = text.replace(form, MASK)
    return text


def contains_secret(text: str) -> bool:
    """True when `text` holds a registered key in any of the forms `redact` masks."""
    return bool(text) and any(form in text for form in _all_forms(()))
