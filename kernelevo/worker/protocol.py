"""Messages between the engine and a worker: length-prefixed msgpack frames over pipes. A request
is a typed record (`Request`) that the receiver parses back through its `RequestKinds`; where the
request names its answer (`Request.reply`), the reply is a typed record too (`Reply`).

The worker keeps its own stdout for the protocol and points fd 1 at stderr, so a
candidate's prints cannot corrupt the channel.
"""

from __future__ import annotations

import contextlib
import os
import struct
import time
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import (
    IO,
    Any,
    ClassVar,
    Generic,
    Literal,
    Self,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
)
from typing import get_type_hints as type_hints

import msgpack

HEADER = struct.Struct(">I")
MAX_FRAME = 256 * 1024 * 1024


class ProtocolError(Exception):
    pass


class RequestError(ValueError):
    """A frame that is not one of the receiver's requests (unknown op, unknown or missing field)."""


@dataclass(frozen=True)
class Reply:
    """One kind of answer as a typed record, the counterpart of `Request`: the receiver answers with
    `wire()`, the sender parses the map back (`parse`) into the record its request names, so a
    missing or unknown field stops at the seam instead of as a KeyError modules later. A record
    inside a reply (a verdict's `Check`) crosses as a map and comes back as the record."""

    def wire(self) -> dict[str, Any]:
        """The map sent over the channel: every field, records inside it as maps; an optional field
        left at None is left out (it parses back as None)."""
        return {
            f.name: _plain(value)
            for f in fields(self)
            if (value := getattr(self, f.name)) is not None or f.default is not None
        }

    @classmethod
    def parse(cls, message: Mapping[str, Any]) -> Self:
        """The record from a received map (raises ProtocolError for a field too many or missing)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(message) - names - {"nonce"})
        if unknown:
            raise ProtocolError(f"{cls.__name__}: unknown field(s) {', '.join(unknown)}")
        hints = _field_types(cls)
        values = {}
        for k, v in message.items():
            if k in names:
                try:
                    values[k] = _record(hints[k], v)
                except (_Mismatch, TypeError) as exc:
                    raise ProtocolError(f"{cls.__name__}.{k}: {exc}") from None
        try:
            return cls(**values)
        except TypeError as exc:
            raise ProtocolError(f"{cls.__name__}: {exc}") from None


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list) and value and is_dataclass(value[0]):
        return [_plain(v) for v in value]
    return value


_FIELD_TYPES: dict[type, dict[str, Any]] = {}


def _field_types(cls: type) -> dict[str, Any]:
    if cls not in _FIELD_TYPES:
        _FIELD_TYPES[cls] = type_hints(cls)
    return _FIELD_TYPES[cls]


class _Mismatch(Exception):
    pass


_PLAIN = {int: (int,), float: (int, float), str: (str,), bool: (bool,)}


def _record(hint: Any, value: Any) -> Any:
    """`value` checked against the field's type, and made the record it names where it is one (or
    a list of records, or an optional one): a reply from a process that runs candidate code is
    data, and a count that is a string must not reach the engine as one."""
    if hint is Any:
        return value
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        for option in args:
            if option is type(None):
                if value is None:
                    return None
                continue
            with contextlib.suppress(_Mismatch, TypeError):
                return _record(option, value)
        raise _Mismatch(f"{type(value).__name__} is none of {hint}")
    if origin is Literal:
        if value not in args:
            raise _Mismatch(f"{value!r} is none of {', '.join(map(repr, args))}")
        return value
    if isinstance(hint, type) and is_dataclass(hint):
        if not isinstance(value, dict):
            raise _Mismatch(f"{type(value).__name__} where a {hint.__name__} map belongs")
        return hint(**value)
    if hint in _PLAIN:
        if not isinstance(value, _PLAIN[hint]) or (hint is not bool and isinstance(value, bool)):
            raise _Mismatch(f"{type(value).__name__} where {hint.__name__} belongs")
        return value
    if origin is list or hint is list:
        if not isinstance(value, list):
            raise _Mismatch(f"{type(value).__name__} where a list belongs")
        item = args[0] if args else Any
        return [_record(item, v) for v in value] if item is not Any else value
    if (origin is dict or hint is dict) and not isinstance(value, dict):
        raise _Mismatch(f"{type(value).__name__} where a map belongs")
    return value


@dataclass(frozen=True)
class Request:
    """One kind of request as a typed record: built by the sender, sent as `wire()`, parsed back into
    the same record by the receiver (`RequestKinds.parse`) before it acts. A request whose class is
    parameterised by a `Reply` record (`class Probe(JudgeRequest[Probed])`) names it as `reply`."""

    op: ClassVar[str] = ""
    reply: ClassVar[type[Reply] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in cls.__dict__.get("__orig_bases__", ()):
            for arg in get_args(base):
                if isinstance(arg, type) and issubclass(arg, Reply):
                    cls.reply = arg

    def wire(self) -> dict[str, Any]:
        """The map sent over the channel: the op and every field, shallow (no copies)."""
        return {"op": self.op, **{f.name: getattr(self, f.name) for f in fields(self)}}


Base = TypeVar("Base", bound=Request)
Kind = TypeVar("Kind", bound=type[Request])


class RequestKinds(Generic[Base]):
    """The requests one receiver understands, by op: records register with `kind`, and `parse`
    turns a frame back into its record, or raises RequestError (an unknown op; a field outside the
    record, but for the op and the channel's nonce; a missing one)."""

    def __init__(self) -> None:
        self.by_op: dict[str, type[Base]] = {}

    def kind(self, op: str) -> Callable[[Kind], Kind]:
        """Class decorator: the record is request `op`."""

        def register(cls: Kind) -> Kind:
            cls.op = op
            self.by_op[op] = cast("type[Base]", cls)
            return cls

        return register

    def parse(self, message: dict[str, Any]) -> Base:
        cls = self.by_op.get(str(message.get("op")))
        if cls is None:
            raise RequestError(f"unknown op {message.get('op')!r}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(message) - names - {"op", "nonce"})
        if unknown:
            raise RequestError(f"{cls.op}: unknown field(s) {', '.join(unknown)}")
        try:
            return cls(**{k: v for k, v in message.items() if k in names})
        except TypeError as exc:
            raise RequestError(f"{cls.op}: {exc}") from None


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


def read(stream: IO[bytes], limit: int = MAX_FRAME) -> dict[str, Any] | None:
    """Blocking read of one frame (of at most `limit` bytes); None on a clean end of stream."""
    head = _read_exact(stream, HEADER.size)
    if head is None:
        return None
    (size,) = HEADER.unpack(head)
    if size > limit:
        raise ProtocolError(f"frame of {size} bytes exceeds the limit")
    body = _read_exact(stream, size)
    if body is None:
        raise ProtocolError("stream ended inside a frame")
    return decode(body)


def decode(payload: bytes) -> dict[str, Any]:
    """One frame's payload (after its length header) back into its map."""
    try:
        message = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    except ValueError as exc:  # msgpack's errors derive from ValueError
        raise ProtocolError(f"not a msgpack frame: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"a frame holds a {type(message).__name__}, not a map")
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
