"""Triton's source hash, computed once per installed Triton instead of once per worker process.

Triton keys every compiled kernel by `triton_key()`: a SHA-256 over its own compiler sources and
libtriton (0.4-0.7 s on the GPU hosts, 0.8 s on the 2-core CPU machine), paid by every fresh
compile worker and runner host before their first compile or launch, on the path of a one-shot
`kernelevo verify`. The judge (trusted, and the only worker that writes the shared caches)
writes the value beside a fingerprint of those files' names, sizes and modification times;
a worker whose Triton has the same fingerprint takes the value instead of hashing. A changed
or reinstalled Triton changes the fingerprint, so a stale value is never used, and where no
value is stored Triton hashes as it always does.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import sys
from pathlib import Path

HASHED = ("compiler", "backends", "language", "_C", os.path.join("runtime", "cache.py"))
_VALUE = re.compile(r"^[0-9A-Za-z.+_-]{1,20000}$")  # a version and hex digests, joined by -


def _triton_root() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def fingerprint(root: Path) -> str:
    """Names, sizes and modification times of every file Triton's own hash reads (and more)."""
    h = hashlib.sha256(f"{sys.version}|{root}".encode())
    for part in HASHED:
        top = root / part
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if _hashed(p))
        for p in files:
            st = p.stat()
            h.update(f"{p.relative_to(root)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _hashed(path: Path) -> bool:
    """Sources and binaries; not the bytecode Python writes beside them as modules are imported."""
    return path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"


def _memo_path(root: Path) -> Path:
    from kernelevo.backends.nvcc import cache_dir

    return cache_dir("triton-key") / f"{fingerprint(root)}.txt"


def stored() -> str | None:
    """The value stored for the installed Triton, if the judge has written one."""
    root = _triton_root()
    if root is None:
        return None
    try:
        value = _memo_path(root).read_text().strip()
    except (OSError, ValueError):
        return None
    return value if _VALUE.match(value) else None


def use_stored() -> bool:
    """Make this process's `triton_key()` return the stored value (before anything compiles or
    binds the function by name); False, and nothing changed, where none is stored."""
    value = stored()
    if value is None:
        return False
    import importlib

    answer = functools.lru_cache(maxsize=None)(lambda: value)
    answer()  # held as Triton's own would be after its first call: a forked child inherits it
    for where in ("triton.runtime.cache", "triton.compiler.compiler"):
        with contextlib.suppress(ImportError):
            module = importlib.import_module(where)
            if hasattr(module, "triton_key"):
                setattr(module, "triton_key", answer)  # noqa: B010
    return True


def remember() -> None:
    """In the judge: hash Triton as Triton does and store the value for the installed Triton, once."""
    with contextlib.suppress(
        Exception
    ):  # a value not stored only means workers hash for themselves
        root = _triton_root()
        if root is None:
            return
        path = _memo_path(root)
        if path.exists():
            return
        from triton.runtime.cache import triton_key

        from kernelevo.atomic_write import write_atomic

        write_atomic(path, triton_key())
