"""Launch arguments for the CUDA fast path: what a kernel receives, checked before the launch.

Pure functions (no GPU, no driver), so the rules are tested on the CPU machine and a
candidate run in compile-only mode still gets the same argument errors as on the GPU.
"""

from __future__ import annotations

import ctypes
import re
import sys
from collections.abc import Sequence
from typing import Any

_SCALAR_SIZES = {
    1: "char|signed char|unsigned char|bool|int8_t|uint8_t",
    2: "short|short int|unsigned short|int16_t|uint16_t|half|__half|__nv_bfloat16|nv_bfloat16",
    4: "int|signed|signed int|unsigned|unsigned int|int32_t|uint32_t|float|half2|__half2|__nv_bfloat162",
    8: "long|long int|unsigned long|long long|long long int|unsigned long long|int64_t|uint64_t|size_t|"
    "ssize_t|ptrdiff_t|intptr_t|uintptr_t|double",
}
_SIZE_OF = {name: size for size, names in _SCALAR_SIZES.items() for name in names.split("|")}
_QUALIFIERS = {
    "const",
    "volatile",
    "__restrict__",
    "__restrict",
    "restrict",
    "__grid_constant__",
    "struct",
}


def param_sizes_from_source(source: str, name: str) -> list[int | None] | None:
    """Byte size of each parameter of kernel `name`, parsed from the source (None: unknown type).

    Best effort, for compile-only mode where the driver cannot tell: None when the
    kernel is not found once as a plain `__global__ void name(...)`.
    """
    pat = re.compile(
        r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
        + re.escape(name)
        + r"\s*\(([^)]*)\)",
        re.S,
    )
    found = pat.findall(re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S))
    if len(found) != 1:
        return None
    text = found[0].strip()
    if not text or text == "void":
        return []
    sizes: list[int | None] = []
    for param in text.split(","):
        if "<" in param or "[" in param:
            sizes.append(None)
        elif "*" in param or "&" in param:
            sizes.append(8)
        else:
            words = [w for w in param.split() if w not in _QUALIFIERS]
            sizes.append(_SIZE_OF.get(" ".join(words[:-1])) if len(words) >= 2 else None)
    return sizes


def _describe(a: Any) -> str:
    return (
        f"{type(a).__module__}.{type(a).__name__}"
        if type(a).__module__ != "builtins"
        else type(a).__name__
    )


def kernel_args(
    args: Sequence[Any],
    *,
    device: int | None = None,
    param_sizes: Sequence[int | None] | None = None,
    kernel: str = "kernel",
) -> list[Any]:
    """Turn launch arguments into ctypes values whose addresses form `kernelParams`.

    torch tensors become their device pointer (checked: CUDA, on `device`, contiguous;
    `device=None` skips the device check, as in compile-only mode); numpy scalars are
    passed as their raw bytes; anything else is refused. With `param_sizes`, the count
    and each byte size must match the kernel's parameters.
    """
    import numpy as np

    if param_sizes is not None and len(args) != len(param_sizes):
        raise TypeError(f"{kernel} takes {len(param_sizes)} arguments, {len(args)} were given")
    out: list[Any] = []
    for i, a in enumerate(args):
        where = f"{kernel} argument {i}"
        if isinstance(a, (bool, int, float)) and not isinstance(
            a, np.generic
        ):  # np.float64 is a float
            kind = (
                "np.int32 or np.int64"
                if isinstance(a, int) and not isinstance(a, bool)
                else "np.bool_/np.uint8"
                if isinstance(a, bool)
                else "np.float32 or np.float64"
            )
            raise TypeError(
                f"{where}: Python {type(a).__name__} {a!r} has no fixed width; "
                f"pass a numpy scalar of the kernel's parameter type ({kind})"
            )
        if isinstance(a, np.generic):
            raw = a.tobytes()
            value: Any = ctypes.create_string_buffer(raw, len(raw))
            size = len(raw)
        elif _is_tensor(a):
            if device is not None:
                if not a.is_cuda:
                    raise ValueError(
                        f"{where}: tensor is on {a.device}, "
                        f"the kernel needs a CUDA tensor on cuda:{device}"
                    )
                if a.device.index != device:
                    raise ValueError(
                        f"{where}: tensor is on {a.device}, the module was loaded on cuda:{device}"
                    )
            if not a.is_contiguous():
                raise ValueError(
                    f"{where}: tensor is not contiguous (shape {tuple(a.shape)}, stride {a.stride()}); "
                    "the kernel sees raw memory: pass t.contiguous(), or handle strides yourself"
                )
            value = ctypes.c_void_p(a.data_ptr())
            size = 8
        else:
            raise TypeError(
                f"{where}: cannot pass {_describe(a)}; use a torch tensor or a numpy scalar"
            )
        want = param_sizes[i] if param_sizes is not None else None
        if want is not None and want != size:
            what = {
                8: "8 bytes (a pointer: pass a tensor; or np.int64/np.float64)",
                4: "4 bytes (np.int32/np.float32)",
                2: "2 bytes (np.int16/np.float16)",
                1: "1 byte (np.int8/np.uint8/np.bool_)",
            }.get(want, f"{want} bytes")
            raise TypeError(
                f"{where}: the kernel parameter takes {what}, got {_describe(a)} ({size} bytes)"
            )
        out.append(value)
    return out


def _is_tensor(a: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(a, torch.Tensor)


def launch_dims(grid: Any, block: Any) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Validate and pad grid/block to 3 dimensions, with messages that name the bad value."""
    import numpy as np

    def dims(v: Any, what: str) -> tuple[int, int, int]:
        t = (
            (v,)
            if isinstance(v, (int, np.integer))
            else tuple(v)
            if isinstance(v, (tuple, list))
            else None
        )
        if (
            t is None
            or not 1 <= len(t) <= 3
            or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in t)
        ):
            raise TypeError(f"{what}={v!r}: expected 1 to 3 ints, e.g. {what}=(128,)")
        t3 = tuple(int(x) for x in t) + (1,) * (3 - len(t))
        if min(t3) < 1:
            raise ValueError(
                f"{what}={t3}: every dimension must be at least 1 (empty input? skip the launch)"
            )
        return t3  # type: ignore[return-value]

    g, b = dims(grid, "grid"), dims(block, "block")
    if g[0] > 2**31 - 1 or g[1] > 65535 or g[2] > 65535:
        raise ValueError(f"grid={g}: limits are (2**31-1, 65535, 65535)")
    if b[0] * b[1] * b[2] > 1024 or b[2] > 64:
        raise ValueError(f"block={b}: at most 1024 threads per block (and z <= 64)")
    return g, b
