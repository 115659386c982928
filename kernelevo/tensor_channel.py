"""Tensors crossing a process boundary as data: shared-memory files on the CPU, CUDA IPC handles on the GPU
(kernelevo/cuda_ipc.py: one allocation per exported tensor).

The judge and the candidate runner exchange inputs, weights and outputs this way, never by
pickling (unpickling what a candidate process sent would run its code in the judge). A
descriptor is plain msgpack data; the side that opens one checks every field, so a forged
descriptor can at worst name memory the sender owns, never a file outside the exchange folder.
"""

from __future__ import annotations

import os
import re
import types
from typing import Any, TypeGuard

import torch

DTYPES = {
    str(d).replace("torch.", ""): d
    for d in (
        torch.float64,
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
        torch.complex64,
        torch.complex128,
    )
}
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,120}$")
_kept: list[torch.Tensor] = []  # GPU copies made for export, alive until the verification ends
# only a candidate process maps CUDA IPC handles (the judge's, never the reverse)
_accept_ipc = False


def accept_cuda_ipc() -> None:
    """Called in the candidate process: it maps the blocks the judge exports. The judge never
    opens a handle, so no descriptor a candidate sends can map memory into the judge."""
    global _accept_ipc
    _accept_ipc = True


def probe_arrived(desc: Any, folder: str, device: torch.device, via: str) -> bool:
    """The judge's probe (0, 1, ... n-1) opened: on a GPU with `via="ipc"` it must have come by
    handle and read right, else the engine switches to files (a wrong offset never goes unseen)."""
    if not isinstance(desc, dict):
        return True
    if device.type != "cuda" or via != "ipc":
        open_tensor(desc, folder, 1 << 20)
        return True
    try:  # whatever goes wrong opening the first handle sends the engine to files
        probe = open_tensor(desc, folder, 1 << 20)
        want = torch.arange(probe.numel(), dtype=probe.dtype)
        return "cuda_ipc" in desc and torch.equal(probe.cpu(), want)
    except Exception:
        return False


def release_kept() -> None:
    """The GPU copies `export_tensor` made go (the candidate process that mapped them is closed)."""
    _kept.clear()


class ChannelError(Exception):
    """A descriptor that does not describe a tensor we can open (malformed, outside the folder, too big)."""


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def export_tensor(t: torch.Tensor, folder: str, name: str, via: str = "ipc") -> dict[str, Any]:
    """Describe `t` so another process can map it. CPU tensors are copied into a file under
    `folder` (unless they already live in one, see `shared_empty`); CUDA tensors are shared by a
    CUDA IPC handle of a block of their own (`via="ipc"`: in place when `t` is already in one, see
    `cuda_ipc.copy_of`, else a copy kept until `release_kept`) or, where CUDA IPC cannot cross,
    copied into a file the reader puts back on its GPU (`via="file"`, the descriptor says `"device": "cuda"`)."""
    t = t.detach()
    meta = {
        "dtype": dtype_name(t.dtype),
        "shape": list(t.shape),
        "stride": list(t.stride()),
        "offset": int(t.storage_offset()),
    }
    if t.device.type == "cuda" and via == "file":
        c = t.contiguous()
        mapped = shared_empty(folder, name, c.numel(), c.dtype)
        mapped.copy_(c.reshape(-1))
        meta.update(
            stride=list(c.stride()),
            offset=0,
            file=os.path.basename(mapped.untyped_storage()._kernelevo_file),
            numel=int(c.numel()),
            device="cuda",
        )  # type: ignore[attr-defined]
        return meta
    if t.device.type == "cuda":
        from kernelevo import cuda_ipc

        if not cuda_ipc.owned(t):  # a block of its own, kept until release_kept(): mapped later
            t = cuda_ipc.copy_of(t)
            _kept.append(t)
        meta.update(stride=list(t.stride()), offset=int(t.storage_offset()))
        meta["cuda_ipc"] = cuda_ipc.handle_of(t)
        return meta
    path = getattr(t.untyped_storage(), "_kernelevo_file", None)
    if path is None or os.path.dirname(path) != os.path.realpath(folder):
        c = t.contiguous()
        mapped = shared_empty(folder, name, c.numel(), c.dtype)
        mapped.copy_(c.reshape(-1))
        meta.update(stride=list(c.stride()), offset=0)
        path = mapped.untyped_storage()._kernelevo_file  # type: ignore[attr-defined]
        meta["numel"] = int(c.numel())
    else:
        meta["numel"] = int(t.untyped_storage().nbytes() // max(t.element_size(), 1))
    meta["file"] = os.path.basename(path)
    return meta


def shared_empty(folder: str, name: str, numel: int, dtype: torch.dtype) -> torch.Tensor:
    """A flat CPU tensor backed by the file `folder/name`, shared with whoever maps the same file."""
    if not _NAME.match(name):
        raise ChannelError(f"bad exchange file name {name!r}")
    path = os.path.join(os.path.realpath(folder), name)
    nbytes = max(numel, 1) * torch.empty((), dtype=dtype).element_size()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:  # the judge and the candidate process run as different uids (the folder above is private)
        os.fchmod(fd, 0o666)
        os.ftruncate(fd, nbytes)
    finally:
        os.close(fd)
    t = torch.from_file(path, shared=True, size=max(numel, 1), dtype=dtype)[:numel]
    t.untyped_storage()._kernelevo_file = path  # type: ignore[attr-defined]
    return t


def open_tensor(desc: Any, folder: str, max_bytes: int) -> torch.Tensor:
    """Map a tensor another process described; every field is checked before use."""
    if not isinstance(desc, dict):
        raise ChannelError("a tensor descriptor must be a map")
    dtype = DTYPES.get(desc.get("dtype"))  # type: ignore[arg-type]
    shape, stride, offset = desc.get("shape"), desc.get("stride"), desc.get("offset")
    if (
        dtype is None
        or not _ints(shape)
        or not _ints(stride)
        or len(shape) != len(stride)
        or not _int(offset)
    ):
        raise ChannelError("malformed tensor descriptor (dtype, shape, stride, offset)")
    if any(s < 0 for s in shape) or any(s < 0 for s in stride) or offset < 0:
        raise ChannelError("negative shape, stride or offset in a tensor descriptor")
    item = torch.empty((), dtype=dtype).element_size()
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) if all(shape) else 0
    if "cuda_ipc" in desc:
        from kernelevo import cuda_ipc

        c = desc["cuda_ipc"]
        if not _accept_ipc:
            raise ChannelError("CUDA IPC descriptors are not opened in this process")
        if (
            not isinstance(c, dict)
            or not _ints([c.get("device"), c.get("size")])
            or not isinstance(c.get("handle"), bytes)
            or len(c["handle"]) != cuda_ipc.HANDLE_BYTES
        ):
            raise ChannelError("malformed CUDA IPC descriptor")
        if c["size"] > max_bytes or (offset + span) * item > c["size"]:
            raise ChannelError(
                f"CUDA IPC descriptor of {c['size']} bytes exceeds what it may describe"
            )
        storage = cuda_ipc.open_handle(c["handle"], c["size"], c["device"]).untyped_storage()
    else:
        name, numel = desc.get("file"), desc.get("numel")
        if not isinstance(name, str) or not _NAME.match(name) or not _int(numel):
            raise ChannelError("malformed shared-memory descriptor")
        path = os.path.join(os.path.realpath(folder), name)
        if not os.path.isfile(path) or os.path.islink(path):
            raise ChannelError(f"no exchange file {name}")
        have = os.path.getsize(path)
        if numel * item > max_bytes or numel * item > have or offset + span > numel:
            raise ChannelError(f"shared-memory descriptor for {name} does not fit its file")
        storage = torch.from_file(
            path, shared=True, size=max(numel, 1), dtype=dtype
        ).untyped_storage()
        storage._kernelevo_file = path  # type: ignore[attr-defined]
    out = torch.empty(0, dtype=dtype, device=storage.device)
    out.set_(storage, offset, shape, stride)
    return out


def _ints(values: object) -> TypeGuard[list[int]]:
    return isinstance(values, list) and all(_int(v) for v in values)


def export_values(values: list[Any], folder: str, prefix: str, via: str = "ipc") -> list[Any]:
    """Arguments as data: tensors become descriptors, plain values stay (nested lists, dicts and
    config objects too: a dataclass or namespace crosses as its fields, opened as a namespace)."""
    return [_export_one(v, folder, f"{prefix}-{i}", via, i) for i, v in enumerate(values)]


def object_fields(value: Any) -> dict[str, Any] | None:
    """The fields of a config object (a dataclass instance, a SimpleNamespace, an object of plain
    attributes such as a PretrainedConfig); None for anything else (a module, a tensor, a class)."""
    if isinstance(value, (torch.Tensor, torch.nn.Module, type)) or not hasattr(value, "__dict__"):
        return None
    fields = vars(value)
    return fields if all(isinstance(k, str) for k in fields) else None


def _scalar(v: object) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _fields(v: Any) -> tuple[str, dict[Any, Any]] | None:
    """("dict", v) for a dict of string keys, ("pairs", v) for one of other plain keys (a config's
    id2label), ("namespace", its fields) for a config object."""
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v):
            return ("dict", v)
        return ("pairs", v) if all(_scalar(k) for k in v) else None
    fields = object_fields(v)
    return None if fields is None else ("namespace", fields)


def crossable(v: Any) -> bool:
    """Whether export_values can send `v` (what a task's get_init_inputs() may return)."""
    if _scalar(v) or isinstance(v, torch.Tensor):
        return True
    if isinstance(v, (list, tuple)):
        return all(crossable(x) for x in v)
    got = _fields(v)
    return got is not None and all(crossable(x) for x in got[1].values())


def tensors_in(v: Any) -> list[torch.Tensor]:
    """Every tensor `export_values` would send of `v`, in the order it describes them."""
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in tensors_in(x)]
    got = _fields(v)
    return [t for x in (got[1].values() if got else ()) for t in tensors_in(x)]


def map_tensors(v: Any, fn: Any) -> Any:
    """`v` with every tensor `export_values` would send replaced by `fn(tensor)`; a config object
    becomes the namespace it would be opened as."""
    if isinstance(v, torch.Tensor):
        return fn(v)
    if isinstance(v, (list, tuple)):
        return type(v)(map_tensors(x, fn) for x in v)
    got = _fields(v)
    if got is None:
        return v
    mapped = {k: map_tensors(x, fn) for k, x in got[1].items()}
    return types.SimpleNamespace(**mapped) if got[0] == "namespace" else mapped


def described_tensors(desc: Any) -> list[Any]:
    """The tensor descriptors in `export_values`' description, in order (what `tensors_in` gives)."""
    if isinstance(desc, list):
        return [t for d in desc for t in described_tensors(d)]
    if not isinstance(desc, dict):
        return []
    if "tensor" in desc:
        return [desc["tensor"]]
    if "list" in desc:
        return described_tensors(desc["list"])
    if "pairs" in desc:
        return [t for pair in desc["pairs"] for t in described_tensors(pair[1:])]
    inner = desc.get("dict", desc.get("namespace"))
    return described_tensors(list(inner.values())) if isinstance(inner, dict) else []


def _export_one(v: Any, folder: str, name: str, via: str, i: int) -> Any:
    if isinstance(v, torch.Tensor):
        return {"tensor": export_tensor(v, folder, name, via)}
    if isinstance(v, (list, tuple)):
        return {"list": export_values(list(v), folder, name, via), "tuple": isinstance(v, tuple)}
    if _scalar(v):
        return {"value": v}
    got = _fields(v)
    if got is None:
        raise ChannelError(
            f"argument {i} is a {type(v).__name__}; only tensors, plain values, lists, dicts and "
            "config objects cross processes"
        )
    kind, fields = got
    if kind == "pairs":
        return {
            kind: [
                [k, _export_one(x, folder, f"{name}-{j}", via, i)]
                for j, (k, x) in enumerate(fields.items())
            ]
        }
    return {
        kind: {
            k: _export_one(x, folder, f"{name}-{j}", via, i)
            for j, (k, x) in enumerate(fields.items())
        }
    }


def placed(desc: Any, t: torch.Tensor) -> torch.Tensor:
    """A tensor that came through a file for a GPU reader, copied onto the GPU (else as mapped)."""
    if isinstance(desc, dict) and desc.get("device") == "cuda" and t.device.type != "cuda":
        return t.to("cuda")
    return t


def open_values(
    items: Any,
    folder: str,
    max_bytes: int,
    mirrors: list[tuple[torch.Tensor, torch.Tensor]] | None = None,
) -> list[Any]:
    """`mirrors` collects (file mapping, GPU copy) for tensors that came through files for the GPU."""
    if not isinstance(items, list):
        raise ChannelError("arguments must be a list")
    return [_open_one(item, folder, max_bytes, mirrors) for item in items]


def _open_one(
    item: Any, folder: str, max_bytes: int, mirrors: list[tuple[torch.Tensor, torch.Tensor]] | None
) -> Any:
    if not isinstance(item, dict):
        raise ChannelError("malformed argument")
    if "tensor" in item:
        mapped = open_tensor(item["tensor"], folder, max_bytes)
        t = placed(item["tensor"], mapped)
        if mirrors is not None and t is not mapped:
            mirrors.append((mapped, t))
        return t
    if "list" in item:
        inner = open_values(item["list"], folder, max_bytes, mirrors)
        return tuple(inner) if item.get("tuple") else inner
    if "value" in item and _scalar(item["value"]):
        return item["value"]
    pairs = item.get("pairs")
    if isinstance(pairs, list) and all(
        isinstance(p, list) and len(p) == 2 and _scalar(p[0]) for p in pairs
    ):
        return {k: _open_one(v, folder, max_bytes, mirrors) for k, v in pairs}
    for kind in ("dict", "namespace"):
        fields = item.get(kind)
        if isinstance(fields, dict) and all(isinstance(k, str) for k in fields):
            opened = {k: _open_one(v, folder, max_bytes, mirrors) for k, v in fields.items()}
            return opened if kind == "dict" else types.SimpleNamespace(**opened)
    raise ChannelError("malformed argument")


def _int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
