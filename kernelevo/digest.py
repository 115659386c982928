"""Content hashes: the keys under which tasks, candidates and results are stored."""

from __future__ import annotations

import hashlib


def text_hash(text: str) -> str:
    """Hash of source text, insensitive to line endings and trailing whitespace."""
    norm = (
        "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip() + "\n"
    )
    return hashlib.sha256(norm.encode()).hexdigest()


def short(h: str, n: int = 12) -> str:
    return h[:n]
