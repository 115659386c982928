"""Compiled bytecode for the workers' imports, where the installed packages ship none.

An install without .pyc files (`pip --no-compile`, uv's default, images that set
PYTHONDONTWRITEBYTECODE) makes every worker compile torch from source as it starts: 4.7-5.3 s
for `import torch` on an H100 host, against ~2 s from bytecode. A worker cannot write bytecode
(its view of the system is read-only) and must not: a candidate that wrote torch's bytecode would
run its code in the judge. So the engine compiles it with compileall (which reads source and
never runs code or an existing .pyc) into a folder that no sandbox binds writable, and workers
read it through PYTHONPYCACHEPREFIX once it is complete. Python checks each .pyc against its
source's mtime and size, so an edited or upgraded file is compiled from source again, never
run stale.

Run as `python -m kernelevo.worker.bytecode FOLDER ROOT...` by `prefix()`, in the background.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import re
import subprocess
import sys
import sysconfig
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

STAMP = "complete.json"
# what no worker imports: test suites, and in the standard library its GUI and installers (and the
# packages folder a system Python keeps inside it, a root of its own here)
SKIP = re.compile(r"[/\\]tests?[/\\]")
SKIP_STDLIB = re.compile(
    r"[/\\](tests?|idlelib|tkinter|turtledemo|lib2to3|ensurepip|site-packages|dist-packages)[/\\]"
)
_started: set[Path] = set()


@lru_cache(maxsize=1)
def wanted(package: str = "torch") -> bool:
    """True where `package` is installed without bytecode beside its source; found without
    importing it (the language server never imports torch)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return False
    origin = Path(spec.origin)
    return not (
        origin.parent / "__pycache__" / f"{origin.stem}.{sys.implementation.cache_tag}.pyc"
    ).exists()


def folder() -> Path:
    """`$KERNELEVO_BYTECODE`, else `$XDG_CACHE_HOME/kernelevo-bytecode` (default `~/.cache`): beside
    the build caches, not in them, since the judge's sandbox binds those writable."""
    named = os.environ.get("KERNELEVO_BYTECODE")
    if named:
        return Path(named).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kernelevo-bytecode"


def roots() -> list[Path]:
    """What workers import from: the standard library, the folders holding torch and triton,
    and the kernelevo package."""
    found = {Path(sysconfig.get_paths()["stdlib"])}
    for name in ("torch", "triton"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            found.add(Path(spec.origin).parent.parent)
    found.add(Path(__file__).resolve().parents[1])
    return sorted(p.resolve() for p in found if p.is_dir())


def stamp(paths: list[Path]) -> dict[str, object]:
    """What the compiled folder was made from; a package installed or removed changes its
    folder's mtime, and with it the stamp."""
    return {
        "python": sys.version,
        "executable": sys.executable,
        "roots": {str(p): p.stat().st_mtime_ns for p in paths},
    }


def prefix(caches: Iterable[Path] | None = None, start: bool = True) -> Path | None:
    """The folder for PYTHONPYCACHEPREFIX where it is wanted, safe and complete; where wanted and
    not complete, starts compiling it (once per process, unless `start` is False) and returns
    None meanwhile. `caches`: the build cache folders, where the caller has just made them."""
    if not wanted():
        return None
    where = folder() / sys.implementation.cache_tag
    if not _safe(where, caches):
        return None
    try:
        done = json.loads((where / STAMP).read_text()) == stamp(roots())
    except (OSError, ValueError):
        done = False
    if done:
        return where
    if start and where not in _started:
        _started.add(where)
        _start(where)
    return None


def use_here() -> None:
    """This process imports the rest of its modules through the compiled folder too, where it
    is complete: a one-shot `kernelevo verify` imports ~60 kernelevo modules (0.31 s from source,
    0.06 s from bytecode, on a 2-core machine). Compiling it is left to the first worker start:
    `kernelevo runs` or `serve` starts none."""
    where = prefix(start=False)
    if where is not None and sys.pycache_prefix is None:
        sys.pycache_prefix = str(where)
        sys.dont_write_bytecode = True  # the folder is written by its build alone


def describe() -> str:
    """For `kernelevo doctor`: whether workers import torch from bytecode, and whose."""
    if not wanted():
        return "torch ships its own"
    where = folder() / sys.implementation.cache_tag
    if not _safe(where):
        return f"none: {where} is inside a build cache or writable by others, so workers compile torch at each start"
    if prefix() == where:
        return f"kernelevo's own, in {where}"
    return f"being compiled into {where}; until then workers compile torch at each start"


def _safe(where: Path, caches: Iterable[Path] | None = None) -> bool:
    """Not inside (nor holding) a folder some sandbox binds writable, and writable only by us."""
    from kernelevo.worker.sandbox_view import CacheFolderError, cache_dirs

    if caches is None:
        try:
            caches = cache_dirs().values()
        except CacheFolderError:
            return False
    where = where.resolve()
    if any(where.is_relative_to(c) or c.is_relative_to(where) for c in caches):
        return False
    for p in (where, where.parent):
        if p.exists() and (p.stat().st_uid != os.geteuid() or p.stat().st_mode & 0o022):
            return False
    return True


def _start(where: Path) -> None:
    from kernelevo.sandbox.env import allowed_name

    env = {
        k: v for k, v in os.environ.items() if allowed_name(k) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    with contextlib.suppress(OSError):  # else workers import from source, as without the folder
        subprocess.Popen(
            [sys.executable, "-m", "kernelevo.worker.bytecode", str(where), *map(str, roots())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # no preexec_fn: the child lowers its own priority
        )


def build(where: Path, paths: list[Path], workers: int = 0) -> bool:
    """Compile every module under `paths` into `where`, then write the stamp. False where another
    process is building it already."""
    import compileall
    from concurrent.futures.process import BrokenProcessPool

    from kernelevo.atomic_write import write_atomic

    umask = os.umask(0o022)  # the candidates' own uids read it
    saved = sys.pycache_prefix, os.environ.get("PYTHONPYCACHEPREFIX")
    try:
        where.mkdir(parents=True, exist_ok=True)
        with open(where / ".lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False
            sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"] = str(where)  # and the pool's
            stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
            for root in paths:
                skip = SKIP_STDLIB if root == stdlib else SKIP
                try:
                    compileall.compile_dir(root, quiet=2, rx=skip, workers=workers)
                except BrokenProcessPool:  # a pool cannot start from here: one process then
                    compileall.compile_dir(root, quiet=2, rx=skip, workers=1)
            write_atomic(where / STAMP, json.dumps(stamp(paths)), new_file_mode=0o644)
        return True
    finally:
        os.umask(umask)
        sys.pycache_prefix = saved[0]
        if saved[1] is None:
            os.environ.pop("PYTHONPYCACHEPREFIX", None)
        else:
            os.environ["PYTHONPYCACHEPREFIX"] = saved[1]


if __name__ == "__main__":
    os.nice(10)
    build(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
