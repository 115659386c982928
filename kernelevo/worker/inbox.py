"""The read-only inbox of a worker's sandbox: copies of the task and candidate files requests name.

A sandbox sees no workspace, so the files a request names are copied here under
content-addressed names (the same task keeps its path, so a worker's per-task caches still
hit), the request's paths point here, and paths in the reply are mapped back.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from kernelevo.atomic_write import write_atomic


class Inbox:
    """Read-only copies of the files requests name, under content-addressed names (the same
    task keeps its path, so a worker's per-task caches still hit)."""

    KEYS = ("task_path", "candidate_path")

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="kernelevo-inbox-")).resolve()
        os.chmod(self.root, 0o711)  # readable to a sandbox's own uid by exact path, not listable
        self._back: dict[str, str] = {}

    def rewrite(self, message: dict[str, Any]) -> dict[str, Any]:
        message = dict(message)
        for key in self.KEYS:
            if isinstance(message.get(key), str) and os.path.isfile(message[key]):
                message[key] = self._copy(message[key])
        return message

    def _copy(self, path: str) -> str:
        data = Path(path).read_bytes()
        folder = self.root / hashlib.sha256(data).hexdigest()[:16]
        target = folder / Path(path).name
        if not target.exists():
            folder.mkdir(mode=0o755, exist_ok=True)
            write_atomic(target, data)
        self._back[str(target)] = str(Path(path).resolve())
        return str(target)

    def map_back(self, value: Any) -> Any:
        """`value` with every inbox path replaced by the file the user knows."""
        if isinstance(value, str):
            if str(self.root) in value:
                for inbox_path, original in self._back.items():
                    value = value.replace(inbox_path, original)
            return value
        if isinstance(value, dict):
            return {k: self.map_back(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.map_back(v) for v in value]
        return value

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
