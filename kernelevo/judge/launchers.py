"""Triton's C launchers, built by the judge into the shared cache that candidates only read.

Triton 3.6 generates a small C launcher per kernel argument signature and compiles it with gcc
(0.3 s on an H100 host) at a kernel's first launch. A candidate may only write its own cache
(runner/candidate_cache.py), so every candidate paid that build again, in its compile ahead and
often in its run. The launcher's source is Triton's, generated from nothing but the argument
types, so the judge (which never runs candidate code) builds it from the types the compile child
reported (runner/precompile.py::launcher_spec) into the shared Triton cache, under the key
Triton itself looks up: a candidate with the same signature finds it there. The types are
checked against Triton's type names first; a candidate cannot put text of its own into the source.
"""

from __future__ import annotations

import re
import time
from typing import Any

from kernelevo.judge import replies as rp
from kernelevo.judge import requests as rq

MAX_SPECS = 16  # per candidate: a few kernels, each with one signature per input-set specialization
MAX_ARGS = 256
# Triton's scalar and pointer types (`i32`, `*fp16`, `*kfp32`), `constexpr`, and tensor descriptors
_TYPE = re.compile(
    r"^(\*k?)?[a-z][a-z0-9]{0,7}$|^constexpr$|^nvTmaDesc$"
    r"|^tensordesc<[a-z0-9]{1,8}\[[0-9, ]{1,64}\][a-zA-Z0-9_=, ]{0,64}>$"
)

_built: set[str] = set()


def _types(value: Any, depth: int = 0) -> Any:
    """The signature as Triton holds it (tuples for tuple arguments); ValueError when not types."""
    if isinstance(value, list) and depth < 4:
        return tuple(_types(v, depth + 1) for v in value)
    if isinstance(value, str) and _TYPE.match(value):
        return value
    raise ValueError(f"not a Triton argument type: {str(value)[:40]!r}")


def _launcher_source(spec: dict[str, Any]) -> str:
    import triton.backends.nvidia.driver as nvidia

    signature = spec.get("signature")
    if not isinstance(signature, list) or len(signature) > MAX_ARGS:
        raise ValueError("no signature list")
    types = [_types(t) for t in signature]
    tma = spec.get("tma")
    meta: list[dict[str, Any] | None] | None = (
        None if tma is None else [{} if bool(flag) else None for flag in tma]
    )
    return str(nvidia.make_launcher({}, dict(enumerate(types)), meta))


def _on_disk(src: str) -> bool:
    """Whether the shared cache holds this launcher already (Triton's own key and file name)."""
    import hashlib
    import sysconfig

    from triton.runtime.build import platform_key
    from triton.runtime.cache import get_cache_manager

    key = hashlib.sha256((src + platform_key()).encode("utf-8")).hexdigest()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    return get_cache_manager(key).get_file(f"__triton_launcher{suffix}") is not None


def build(req: rq.Launchers) -> rp.LaunchersBuilt:
    """Each launcher that is not in the shared cache yet, built as Triton would build it."""
    t0 = time.perf_counter()
    built = found = 0
    refused: list[str] = []
    try:
        import triton.backends.nvidia.driver as nvidia
    except ImportError as exc:
        return rp.LaunchersBuilt(refused=[f"Triton's CUDA driver: {exc}"])
    specs = req.specs if isinstance(req.specs, list) else [req.specs]
    for spec in specs[:MAX_SPECS]:
        try:
            if not isinstance(spec, dict):
                raise TypeError("a launcher spec is a map of signature and tma")
            src = _launcher_source(spec)
        except (ValueError, TypeError, KeyError, AttributeError, IndexError, AssertionError) as exc:
            refused.append(f"{type(exc).__name__}: {exc}"[:200])
            continue
        if src in _built or _on_disk(src):
            _built.add(src)
            found += 1
            continue
        try:
            nvidia.compile_module_from_src(
                src=src,
                name="__triton_launcher",
                library_dirs=nvidia.library_dirs(),
                include_dirs=nvidia.include_dirs,
                libraries=nvidia.libraries,
            )
        except Exception as exc:  # the candidate's own run builds it then, as Triton does
            refused.append(f"{type(exc).__name__}: {exc}"[:200])
            continue
        _built.add(src)
        built += 1
    return rp.LaunchersBuilt(
        built=built, found=found, refused=refused, seconds=time.perf_counter() - t0
    )
