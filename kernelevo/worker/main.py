"""The worker's loop: read a request, run it, answer. Started by `pool.py`, never by users.

Requests: {"op": "ping"}, {"op": "verify", ...} (see verify/checks.py), {"op": "aot", ...}
(compile launched Triton kernels for a GPU target), {"op": "exit"}.
"""
from __future__ import annotations

import os
import sys
import traceback
from typing import Any, Callable


def _handlers() -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
    from kernelevo.verify.checks import run_verification
    from kernelevo.worker.measure import measure
    from kernelevo.worker.ops import aot_compile, ping

    return {"verify": run_verification, "aot": aot_compile, "ping": ping, "measure": measure}


def serve() -> int:
    from kernelevo.worker import protocol

    channel_in = os.fdopen(os.dup(0), "rb", buffering=0)
    channel_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import kernelevo.timing  # noqa: F401  (keeps its own copies of clocks and events before any candidate)
    from kernelevo.worker.sandbox import Integrity

    import threading

    handlers = _handlers()
    integrity = Integrity()
    threads_at_start = threading.active_count()
    protocol.write(channel_out, {"op": "ready", "pid": os.getpid()})
    while True:
        request = protocol.read(channel_in)
        if request is None or request.get("op") == "exit":
            return 0
        handler = handlers.get(request.get("op", ""))
        if handler is None:
            protocol.write(channel_out, {"error": f"unknown op {request.get('op')!r}"})
            continue
        try:
            reply = handler(request)
        except BaseException as exc:  # a worker answers every request it survives
            reply = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}
        text = f"{reply.get('reason', '')} {reply.get('error', '')}".lower()
        if any(m in text for m in ("cuda error", "illegal memory access", "illegal address", "misaligned address",
                                   "unspecified launch failure", "device-side assert")):
            reply["poisoned"] = True
        patched = integrity.violations()
        if threading.active_count() > threads_at_start:
            patched.append("a background thread left running")
        if patched:
            reply["integrity_violation"] = patched
        protocol.write(channel_out, reply)
        if patched or reply.get("poisoned"):
            return 3


if __name__ == "__main__":
    raise SystemExit(serve())
