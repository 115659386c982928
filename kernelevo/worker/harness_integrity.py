"""Inside a worker: untouched timers and harness functions between candidates.

A candidate must not leave patched timers, events or comparison functions behind for the
next candidate in the same process. (What the process can reach from outside, its
environment included, is kernelevo/sandbox's business.)
"""

from __future__ import annotations

import importlib
from typing import Any

GUARDED = [
    ("torch", "allclose"),
    ("torch", "isclose"),
    ("torch", "equal"),
    ("torch.testing", "assert_close"),
    ("torch.cuda", "Event"),
    ("torch.cuda", "synchronize"),
    ("torch.cuda", "current_stream"),
    ("torch.cuda", "Stream"),
    ("torch", "empty"),
    ("torch", "empty_like"),
    ("time", "perf_counter"),
    ("time", "time"),
    ("time", "monotonic"),
    ("torch.Tensor", "__eq__"),
    ("torch.Tensor", "__sub__"),
    ("torch.Tensor", "abs"),
    ("torch.Tensor", "copy_"),
    ("torch.Tensor", "clone"),
    ("torch.nn.Module", "__call__"),
]


def _lookup(owner: str, attr: str) -> Any:
    obj: Any
    if owner == "torch.Tensor":
        import torch

        obj = torch.Tensor
    elif owner == "torch.nn.Module":
        import torch

        obj = torch.nn.Module
    else:
        obj = importlib.import_module(owner)
    return obj, getattr(obj, attr, None)


class Integrity:
    """Snapshot of guarded attributes; `violations()` lists and restores anything replaced."""

    def __init__(self) -> None:
        self._orig = {(o, a): _lookup(o, a) for o, a in GUARDED}

    def violations(self) -> list[str]:
        bad = []
        for (owner, attr), (obj, value) in self._orig.items():
            _, now = _lookup(owner, attr)
            if now is not value:
                bad.append(f"{owner}.{attr}")
                setattr(obj, attr, value)
        return bad


_TRUSTED_THREADS: set[int] = set()


class TrustedThreads:
    """Threads the harness itself starts (torch.compile's compile pool) are not a candidate's doing.

    Used as `with TrustedThreads(): compile_baseline(...)`: threads that appear inside
    the block are exempt from the 'no background thread left running' rule.
    """

    def __enter__(self) -> TrustedThreads:
        import threading

        self._before = {t.ident for t in threading.enumerate()}
        return self

    def __exit__(self, *exc: object) -> None:
        import threading

        _TRUSTED_THREADS.update(
            t.ident
            for t in threading.enumerate()
            if t.ident is not None and t.ident not in self._before
        )


def new_threads(before: set[int | None]) -> list[str]:
    """Names of live threads started since `before` (a set of idents) that the harness did not start."""
    import threading

    return [
        t.name
        for t in threading.enumerate()
        if t.is_alive() and t.ident not in before and t.ident not in _TRUSTED_THREADS
    ]


def harness_violations(integrity: Integrity, threads_before: set[int | None]) -> list[str]:
    """What a request left behind in the process that served it: guarded attributes replaced
    (restored by `integrity`) and background threads still running. The one check shared by the
    judge's loop (worker/main.py) and the candidate process (runner/host.py)."""
    found = integrity.violations()
    left = new_threads(threads_before)
    if left:
        found.append(f"a background thread left running ({', '.join(left[:3])})")
    return found
