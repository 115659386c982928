"""The loop of a long-lived runner process (the candidate runner host, the compile worker) over
the engine's pipe. Its children, which run candidate code, never see that pipe."""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable
from typing import Any

from kernelevo.runner.host import Host
from kernelevo.worker import protocol


def serve_engine(
    kind: str,
    preload: Callable[[], None],
    answer: Callable[[Host, dict[str, Any]], dict[str, Any]],
) -> int:
    """The long-lived process's loop over the engine's pipe, for the runner host and the compile
    worker alike: the pipe kept on descriptors of its own (stdout goes to stderr, so a stray
    print cannot forge a frame), `preload` once, then each request answered by `answer` with a
    `Host` whose children run the candidate code. Ends on `exit`, on a closed pipe or when the
    engine is gone; the host's last child and its leftovers are removed on the way out."""
    channel_in = os.fdopen(os.dup(0), "rb", buffering=0)
    channel_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    protocol.mark("python")
    preload()
    host = Host(kind)
    protocol.mark("spare_child" if host.keeps_spare else "host")
    protocol.write(channel_out, protocol.ready())
    parent = os.getppid()
    while True:
        ready, _, _ = select.select([channel_in], [], [], 0.5)
        if os.getppid() != parent:
            break
        if not ready:
            continue
        request = protocol.read(channel_in)
        if request is None or request.get("op") == "exit":
            break
        reply = answer(host, request)
        if "nonce" in request:  # never relayed to the child, so a frame it forges cannot carry it
            reply["nonce"] = request["nonce"]
        protocol.write(channel_out, reply)
        host.settle()
    host.close(final=True)
    return 0
