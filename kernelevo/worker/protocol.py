"""Messages between the engine and a worker: length-prefixed msgpack frames over pipes.

The worker keeps its own stdout for the protocol and points fd 1 at stderr, so a
candidate's prints cannot corrupt the channel.
"""

from __future__ import annotations

import os
import struct
import time
from typing import IO, Any

import msgpack

HEADER = struct.Struct(">I")
MAX_FRAME = 256 * 1024 * 1024


class ProtocolError(Exception):
    pass


def encode(message: dict[str, Any]) -> bytes:
    payload: bytes = msgpack.packb(message, use_bin_type=True, default=_default)
    return HEADER.pack(len(payload)) + payload


def _default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


def write(stream: IO[bytes], message: dict[str, Any]) -> None:
    stream.write(encode(message))
    stream.flush()


def read(stream: IO[bytes]) -> dict[str, Any] | None:
    """Blocking read of one frame; None on a clean end of stream."""
    head = _read_exact(stream, HEADER.size)
    if head is None:
        return None
    (size,) = HEADER.unpack(head)
    if size > MAX_FRAME:
        raise ProtocolError(f"frame of {size} bytes exceeds the limit")
    body = _read_exact(stream, size)
    if body is None:
        raise ProtocolError("stream ended inside a frame")
    message: dict[str, Any] = msgpack.unpackb(body, raw=False, strict_map_key=False)
    return message


def _read_exact(stream: IO[bytes], n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            if got == 0:
                return None
            raise ProtocolError("stream ended inside a frame")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def ready(entered_age_s: float | None) -> dict[str, Any]:
    """The first frame a worker sends, once its preload or warm-up is done. It carries the process's
    age then and when its request loop was entered (`entered_age_s`), so the engine can say where
    a start went: the sandbox, the interpreter and module imports, the preload and warm-up."""
    return {
        "op": "ready",
        "pid": os.getpid(),
        "age_s": {"entered": entered_age_s, "ready": process_age_s()},
    }


def process_age_s() -> float | None:
    """Seconds since this process was forked (exec keeps the time: the sandbox's entry program and
    the worker count as one), from /proc; None where it cannot be read."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        ticks = int(stat[stat.rfind(b")") + 2 :].split()[19])  # field 22, starttime
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        return round(now - ticks / os.sysconf("SC_CLK_TCK"), 3)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def start_parts(total_s: float, ages: Any) -> dict[str, float]:
    """A start split by the worker's own clock (protocol.ready): the sandbox (spawn until the
    process inside begins), python (the interpreter, the sandbox's entry program and the main
    module's imports: torch, in the judge), preload (the runner host's and compile worker's torch
    and Triton imports and warm compile; the judge's warm-up, its CUDA context on a GPU)."""
    entered = ages.get("entered") if isinstance(ages, dict) else None
    ready = ages.get("ready") if isinstance(ages, dict) else None
    if not isinstance(entered, (int, float)) or not isinstance(ready, (int, float)):
        return {}
    return {
        "sandbox": round(max(total_s - ready, 0.0), 3),
        "python": round(entered, 3),
        "preload": round(ready - entered, 3),
    }
