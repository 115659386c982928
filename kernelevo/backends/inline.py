"""load_inline compatibility path: KernelBench solutions build unchanged, but safely.

torch's `load_inline` builds every extension of one name in one shared folder, guarded
by a `lock` file; a build killed mid-way (a worker timed out) leaves that file behind
and every later build of the name waits on it forever. It also has no time limit.
`install_load_inline_guard()` (run by the worker before a candidate is imported)
replaces `torch.utils.cpp_extension.load_inline` so that each build:

- gets its own folder, named by a hash of everything that shapes the binary (sources,
  flags, name, torch/python/nvcc versions), under `$KERNELEVO_CACHE/inline`;
- holds an OS lock (flock) on that folder while it builds, so a `lock` file found
  while holding it is stale (its builder is dead) and is removed;
- runs ninja in its own process group under `$KERNELEVO_BUILD_TIMEOUT` seconds
  (default 300), killed on timeout; a failed build's folder is deleted;
- reports compiler errors as CudaCompileError, located in the candidate's strings
  (`cuda_sources:12: error: ...`).

Without a GPU (`KERNELEVO_CUDA_COMPILE_ONLY=1`), nothing is built or loaded: the sources
are compiled as torch would lay them out (see inline_check), a success is remembered by
key, and a stub module comes back whose functions raise
`CudaUnavailable("compiled, not run (no GPU)")`. Every call is recorded in `inline_builds()`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import glob
import hashlib
import inspect
import json
import os
import re
import shutil
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kernelevo.backends.inline_check import as_list, check_sources, function_names, mapped, offsets
from kernelevo.backends.nvcc import (
    NOT_RUN,
    CudaCompileError,
    CudaCompileTimeout,
    CudaUnavailable,
    cache_dir,
    compile_error,
    compile_only,
    nvcc_version,
    run_limited,
    timeout_from_env,
)

DEFAULT_BUILD_TIMEOUT_S = 300.0
_FORMAT = 1

_builds: list[dict[str, Any]] = []
_active = threading.local()  # the guarded build in progress on this thread: (deadline, lock fd)
_original_load_inline: Callable[..., Any] | None = None
_original_ninja: Callable[..., Any] | None = None


def inline_builds() -> list[dict[str, Any]]:
    """One record per guarded `load_inline` call: name, key, folder, mode, ok, cached, seconds, error..."""
    return [dict(b) for b in _builds]


def reset_inline_builds() -> None:
    _builds.clear()


def _compile_only() -> bool:
    return compile_only()


def install_load_inline_guard() -> None:
    """Replace `torch.utils.cpp_extension.load_inline` (and its ninja runner) once per process."""
    global _original_load_inline, _original_ninja
    import torch.utils.cpp_extension as ext

    if getattr(ext.load_inline, "__kernelevo_guard__", False):
        return
    _original_load_inline = ext.load_inline
    guarded = functools.wraps(_original_load_inline)(_guarded_load_inline)
    guarded.__kernelevo_guard__ = True  # type: ignore[attr-defined]
    ext.load_inline = guarded
    if hasattr(ext, "_run_ninja_build") and not getattr(
        ext._run_ninja_build, "__kernelevo_guard__", False
    ):
        _original_ninja = ext._run_ninja_build
        _run_ninja_limited.__kernelevo_guard__ = True  # type: ignore[attr-defined]
        ext._run_ninja_build = _run_ninja_limited


def _bind(args: tuple, kwargs: dict) -> dict[str, Any]:
    assert _original_load_inline is not None
    bound = inspect.signature(_original_load_inline).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


_FLAG_LISTS = ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths")


def build_key(arguments: dict[str, Any]) -> str:
    """Hash of all that shapes the built binary; equal keys may share one build folder."""
    import torch

    parts = {
        k: v
        for k, v in arguments.items()
        if k not in ("build_directory", "verbose", "keep_intermediates")
    }
    parts["cpp_sources"] = as_list(parts.get("cpp_sources"))
    parts["cuda_sources"] = as_list(parts.get("cuda_sources"))
    for k in _FLAG_LISTS:  # None, [] and [""] all build the same binary
        parts[k] = [f for f in as_list(parts.get(k)) if f]
    env = {
        "format": _FORMAT,
        "torch": torch.__version__,
        "torch_cuda": getattr(torch.version, "cuda", None),
        "python": list(sys.version_info[:2]),
        "platform": sys.platform,
        **{v: os.environ.get(v) for v in ("TORCH_CUDA_ARCH_LIST", "CC", "CXX")},
    }
    if parts["cuda_sources"]:
        try:
            env["nvcc"] = nvcc_version()
        except CudaUnavailable:
            env["nvcc"] = None
    blob = json.dumps([parts, env], sort_keys=True, default=repr, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def build_folder(name: str, key: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", str(name))[:64] or "ext"
    return cache_dir("inline") / f"{safe}-{key[:16]}"


@contextlib.contextmanager
def hold_build_folder(folder: Path, timeout: float) -> Iterator[tuple[int, bool]]:
    """Hold the folder's flock (waiting up to `timeout`); yield (fd, stale_lock_removed).

    The lock lives beside the folders (`.locks/`), so deleting a failed build's folder
    never deletes a lock someone waits on. A process that dies releases it.
    """
    locks = folder.parent / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    fd = os.open(locks / f"{folder.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise CudaCompileTimeout(
                        f"another process kept building {folder.name} for more than {timeout:g} s",
                        errors=[],
                    ) from None
                time.sleep(0.05)
        folder.mkdir(parents=True, exist_ok=True)
        stale = folder / "lock"
        removed = stale.exists()
        if removed:
            stale.unlink(missing_ok=True)
        yield fd, removed
    finally:
        os.close(fd)


def _guarded_load_inline(*args: Any, **kwargs: Any) -> Any:
    a = _bind(args, kwargs)
    for k in ("cpp_sources", "cuda_sources"):
        if isinstance(a.get(k), list):
            a[k] = list(a[k])  # torch inserts headers into the caller's list
    key = build_key(a)
    record: dict[str, Any] = {
        "name": a["name"],
        "key": key,
        "folder": None,
        "ok": False,
        "cached": False,
        "error": None,
        "functions": function_names(a),
        "cuda": bool(as_list(a.get("cuda_sources"))),
    }
    start = time.monotonic()
    try:
        if _compile_only():
            record["mode"] = "compile_only"
            return _check_only(a, key, record)
        record["mode"] = "build"
        return _build(a, key, record)
    except BaseException as e:
        record["error"] = f"{type(e).__name__}: {e}"
        raise
    finally:
        record["seconds"] = round(time.monotonic() - start, 3)
        _builds.append(record)


def _build(a: dict[str, Any], key: str, record: dict[str, Any]) -> Any:
    assert _original_load_inline is not None
    timeout = timeout_from_env("KERNELEVO_BUILD_TIMEOUT", DEFAULT_BUILD_TIMEOUT_S)
    folder = build_folder(a["name"], key)
    record["folder"] = str(folder)
    deadline = time.monotonic() + timeout
    where = offsets(a)
    with hold_build_folder(folder, timeout) as (fd, stale):
        record["stale_lock_removed"] = stale
        record["cached"] = bool(glob.glob(str(folder / "*.so")))
        built = _load_built(folder, a) if record["cached"] else None
        if built is not None:
            record.update(ok=True, prebuilt=True)
            return _Traced(built)
        a["build_directory"] = str(folder)
        _active.state = (deadline, fd)
        try:
            module = _original_load_inline(**a)
        except CudaCompileError as e:
            shutil.rmtree(folder, ignore_errors=True)
            raise mapped(e, where) from None
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        finally:
            _active.state = None
    record["ok"] = True
    return _Traced(module)


def _load_built(folder: Path, a: dict[str, Any]) -> types.ModuleType | None:
    """The module a folder of this key already holds, imported without torch's build step: a new
    process's load_inline always reruns ninja, and in a folder copied to another path (a compiled
    candidate handed from the compile sandbox to the runner) ninja sees new paths and rebuilds
    everything, 40 s of nvcc for a binary that is already there."""
    import importlib.util

    if not a.get("is_python_module", True) or a.get("is_standalone"):
        return None
    spec = importlib.util.spec_from_file_location(a["name"], folder / f"{a['name']}.so")
    if spec is None or spec.loader is None or not Path(str(spec.origin)).is_file():
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError:  # left half-written: build it again
        return None
    return module


call_hook: Callable[[Any, Any], None] | None = (
    None  # set by the verifier (opwatch): sees each extension call
)


class _Traced(types.ModuleType):
    """The built extension, its functions reporting their arguments and results to `call_hook`
    (the verifier follows which tensors the candidate's own kernels produced)."""

    def __init__(self, module: Any) -> None:
        super().__init__(getattr(module, "__name__", "extension"))
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if callable(value) and not name.startswith("_"):
            inner = value

            def traced(*args: Any, **kwargs: Any) -> Any:
                out = inner(*args, **kwargs)
                if call_hook is not None:
                    call_hook((args, kwargs), out)
                return out

            value = functools.wraps(inner)(traced) if hasattr(inner, "__name__") else traced
        setattr(self, name, value)  # looked up once: later calls cost no __getattr__
        return value


def _run_ninja_limited(build_directory: str, verbose: bool, error_prefix: str) -> None:
    """torch's `_run_ninja_build`, in its own process group, under the guarded build's deadline."""
    import torch.utils.cpp_extension as ext

    state = getattr(_active, "state", None)
    deadline, fd = (
        state
        if state
        else (
            time.monotonic() + timeout_from_env("KERNELEVO_BUILD_TIMEOUT", DEFAULT_BUILD_TIMEOUT_S),
            None,
        )
    )
    cmd = ["ninja", "-v"]
    workers = ext._get_num_workers(verbose) if hasattr(ext, "_get_num_workers") else None
    if workers is not None:
        cmd += ["-j", str(workers)]
    remaining = max(deadline - time.monotonic(), 0.1)
    sys.stdout.flush()
    res = run_limited(
        cmd,
        cwd=build_directory,
        timeout=remaining,
        env=os.environ.copy(),
        what="load_inline build (ninja)",
        pass_fds=(fd,) if fd is not None else (),
    )
    if verbose and res.output:
        print(res.output, end="" if res.output.endswith("\n") else "\n")
    if res.returncode != 0:
        raise compile_error(
            res.output,
            header=f"{error_prefix} (ninja exit {res.returncode}):",
            strip_prefixes=[build_directory, os.path.realpath(build_directory)],
        )


def _check_only(a: dict[str, Any], key: str, record: dict[str, Any]) -> types.ModuleType:
    marker = cache_dir("inline-check") / f"{key}.ok"
    if marker.exists():
        record.update(ok=True, cached=True)
        return _stub(a)
    record.update(
        check_sources(a, timeout_from_env("KERNELEVO_BUILD_TIMEOUT", DEFAULT_BUILD_TIMEOUT_S))
    )
    if "unchecked" not in record:
        marker.write_text("")
    record["ok"] = True
    return _stub(a)


def _stub(a: dict[str, Any]) -> types.ModuleType:
    mod = _NotRunModule(str(a["name"]))
    for fname in function_names(a):
        setattr(mod, fname, _not_run(fname))
    return mod


class _NotRunModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _not_run(name)


def _not_run(fname: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise CudaUnavailable(f"{NOT_RUN}: load_inline function {fname!r}")

    call.__name__ = fname
    return call
