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


_MARKS: dict[str, float] = {}


def mark(step: str) -> None:
    """Note this process's age now under `step` (what just finished): the ready frame carries every
    mark, so a start can be read step by step where it cannot be profiled (on the GPU machine)."""
    age = process_age_s()
    if age is not None:
        _MARKS[step] = age


def ready() -> dict[str, Any]:
    """The first frame a worker sends, once its preload or warm-up is done, with its marks and its
    age now (seconds since the process started)."""
    return {"op": "ready", "pid": os.getpid(), "age_s": {**_MARKS, "ready": process_age_s()}}


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
    """A start split by the worker's own marks (`ready`): `sandbox`, from the spawn until the process
    inside began; then each mark's step since the one before, in order (`python`: the interpreter,
    the sandbox's entry program and the main module's imports, torch among them in the judge);
    `rest`, from the last mark to ready. Empty where the frame carries no usable ages."""
    if not isinstance(ages, dict) or not isinstance(ages.get("ready"), (int, float)):
        return {}
    ready_age = float(ages["ready"])
    marks = [
        (float(v), str(k))
        for k, v in ages.items()
        if k != "ready" and isinstance(v, (int, float)) and 0 <= v <= ready_age
    ]
    parts = {"sandbox": round(max(total_s - ready_age, 0.0), 3)}
    before = 0.0
    for age, step in marks:  # noted in the order they happened (ties within a clock tick kept)
        parts[step] = round(age - before, 3)
        before = age
    parts["rest"] = round(ready_age - before, 3)
    return parts
