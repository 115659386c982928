"""The worker's loop: read a request, run it, answer. Started by `pool.py`, never by users.

The loop is shared by the processes that answer one request at a time: the compile
worker (kernelevo/runner/compile_worker.py: precompile, aot) and the judge
(kernelevo/judge/process.py). Every reply echoes the request's `nonce`.
Requests: {"op": "ping"}, the process's own ops, {"op": "exit"}.
"""

from __future__ import annotations

import itertools
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def profiled(
    handler: Callable[[dict[str, Any]], dict[str, Any]], request: dict[str, Any]
) -> dict[str, Any]:
    """Run under cProfile and dump `<pid>-<n>-<op>.prof` into $KERNELEVO_WORKER_PROFILE (bench/profile_verdict.py)."""
    import cProfile

    prof = cProfile.Profile()
    try:
        return prof.runcall(handler, request)
    finally:
        name = f"{os.getpid()}-{next(_PROFILE_COUNT):03d}-{request.get('op')}.prof"
        try:  # a profile that cannot be written never fails the request it measured
            prof.dump_stats(os.path.join(os.environ["KERNELEVO_WORKER_PROFILE"], name))
        except OSError as exc:
            print(f"kernelevo: profile {name} not written: {exc}", file=sys.stderr)


_PROFILE_COUNT = itertools.count(1)


def _exit_with_parent(parent: int) -> None:
    """A worker never outlives its engine: when the parent is gone (killed, or a time limit stopped
    it), the worker's whole process group goes too, even mid-candidate (a spinning kernel, a build)."""
    import signal
    import time

    while os.getppid() == parent:
        time.sleep(0.5)
    try:
        os.killpg(os.getpgid(0), signal.SIGKILL)
    finally:
        os._exit(1)


def serve(
    handlers: dict[str, Handler] | None = None,
    route_all: str | None = None,
    warm: Callable[[], Any] | None = None,
) -> int:
    """`route_all`: the handler every op but ping goes to; `warm`: run before answering ready."""
    from kernelevo.worker import protocol
    from kernelevo.worker.ops import ping

    channel_in = os.fdopen(os.dup(0), "rb", buffering=0)
    channel_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import threading

    import kernelevo.measure.timing  # noqa: F401  (keeps its own copies of clocks and events before any candidate)
    from kernelevo.worker.harness_integrity import Integrity, harness_violations

    threading.Thread(
        target=_exit_with_parent, args=(os.getppid(),), name="kernelevo-parent-watch", daemon=True
    ).start()
    protocol.mark("python")
    if warm is not None and os.environ.get("KERNELEVO_WORKER_WARMUP", "1") in ("1", "light"):
        warm()
    handlers = {"ping": ping, **(handlers or {})}
    profile_dir = os.environ.get("KERNELEVO_WORKER_PROFILE")
    integrity = Integrity()
    protocol.write(channel_out, protocol.ready())
    while True:
        request = protocol.read(channel_in)
        if request is None or request.get("op") == "exit":
            return 0
        threads_before = {t.ident for t in threading.enumerate()}
        handler = handlers.get(request.get("op", ""))
        if handler is None and route_all and request.get("op") != "ping":
            handler = handlers[route_all]
        if handler is None:
            protocol.write(channel_out, {"error": f"unknown op {request.get('op')!r}"})
            continue
        try:
            reply = profiled(handler, request) if profile_dir else handler(request)
        except BaseException as exc:  # a worker answers every request it survives
            reply = {
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()[-4000:],
            }
        text = f"{reply.get('reason', '')} {reply.get('error', '')}".lower()
        if any(
            m in text
            for m in (
                "cuda error",
                "illegal memory access",
                "illegal address",
                "misaligned address",
                "unspecified launch failure",
                "device-side assert",
            )
        ):
            reply["poisoned"] = True
        patched = harness_violations(integrity, threads_before)
        if patched:
            reply["integrity_violation"] = patched
        if "nonce" in request:
            reply["nonce"] = request["nonce"]
        protocol.write(channel_out, reply)
        if patched or reply.get("poisoned"):
            return 3


if __name__ == "__main__":
    raise SystemExit(serve())
