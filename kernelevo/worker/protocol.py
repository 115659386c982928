"""Messages between the engine and a worker: length-prefixed msgpack frames over pipes.

The worker keeps its own stdout for the protocol and points fd 1 at stderr, so a
candidate's prints cannot corrupt the channel.
"""

from __future__ import annotations

import struct
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
