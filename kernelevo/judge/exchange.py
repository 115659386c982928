"""The folder where tensors cross between the judge and the candidate process: one per evaluator,
a sub-folder per verification."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any


def exchange_root() -> str:
    """Where tensors cross between the judge and the candidate process (both sandboxes bind it
    writable): /dev/shm when there is one. One per evaluator; each verification a folder in it.
    The judge and the candidate process run as different uids, so the folder is world-writable,
    inside a parent only the engine's user can enter (`remove_exchange` removes both)."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    root = os.path.join(tempfile.mkdtemp(prefix="kernelevo-exchange-", dir=base), "x")
    os.mkdir(root)
    os.chmod(root, 0o777)
    return root


def remove_exchange(root: str) -> None:
    shutil.rmtree(root, ignore_errors=True)
    parent = os.path.dirname(root)
    if os.path.basename(root) == "x" and os.path.basename(parent).startswith("kernelevo-exchange-"):
        shutil.rmtree(parent, ignore_errors=True)


def exchange_folder(ev: Any = None) -> str:
    root = getattr(ev, "exchange", None)
    folder = tempfile.mkdtemp(prefix="v-", dir=root) if root else exchange_root()
    os.chmod(folder, 0o777)
    return folder
