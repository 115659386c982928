"""What a worker's sandbox is given: its environment, the build caches it shares with the other
workers, the key files hidden from it, and the user's package folders a task imports from.

Kept apart from the pool (worker/pool.py), which starts, feeds and recycles the processes.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from kernelevo.sandbox import SandboxError
from kernelevo.sandbox.mounts import package_root
from kernelevo.worker.bytecode import prefix as bytecode_prefix


class CacheFolderError(SandboxError):
    """A build cache folder the environment names cannot be made (a file there, no permission):
    no worker can start, so it is the user's one-line error."""


def worker_env(device: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    if device == "cpu":
        env.update(
            {
                "TRITON_INTERPRET": "1",
                "KERNELEVO_CUDA_COMPILE_ONLY": "1",
                "CUDA_VISIBLE_DEVICES": "",
            }
        )
    elif device == "compile":
        env.update(
            {
                "KERNELEVO_CUDA_COMPILE_ONLY": "1",
                "CUDA_VISIBLE_DEVICES": "",
                "TRITON_INTERPRET": "0",
            }
        )
    else:  # a GPU run worker: torch.compile's baseline compiles in-process, leaving no pool of compile
        # processes busy on the host while the next candidate is timed
        env["TORCHINDUCTOR_COMPILE_THREADS"] = os.environ.get("TORCHINDUCTOR_COMPILE_THREADS", "1")
    env["PYTHONPATH"] = str(package_root())
    caches = cache_dirs()
    env.update({name: str(path) for name, path in caches.items()})
    compiled = bytecode_prefix(caches.values())
    if compiled is not None:  # read only: no worker writes it (worker/bytecode.py)
        env["PYTHONPYCACHEPREFIX"] = str(compiled)
    env.update(extra or {})
    return env


def cache_dirs() -> dict[str, Path]:
    """The build caches a worker writes (compiled Triton kernels, inline extensions, Inductor
    code): shared by the engine's workers so a kernel compiled ahead is found when it runs."""
    from kernelevo.backends.nvcc import cache_dir, shared_folder

    try:
        kernelevo_cache = cache_dir("inline").parent
    except OSError as exc:
        raise _unusable("KERNELEVO_CACHE", exc) from None
    home = Path.home()
    dirs = {
        "KERNELEVO_CACHE": kernelevo_cache,
        "TRITON_CACHE_DIR": Path(os.environ.get("TRITON_CACHE_DIR") or home / ".triton" / "cache"),
        "TORCHINDUCTOR_CACHE_DIR": Path(
            os.environ.get("TORCHINDUCTOR_CACHE_DIR")
            or Path(tempfile.gettempdir()) / f"torchinductor_{_user()}"
        ),
    }
    if os.environ.get("TORCH_EXTENSIONS_DIR"):
        dirs["TORCH_EXTENSIONS_DIR"] = Path(os.environ["TORCH_EXTENSIONS_DIR"])
    for name, path in dirs.items():
        try:
            shared_folder(path)
        except OSError as exc:
            raise _unusable(name, exc) from None
    return {k: v.resolve() for k, v in dirs.items()}


def unreadable_caches() -> list[Path]:
    """Shared build caches the candidates' own uid cannot read (a folder made 0700 by the user or
    a umask): candidates then rebuild what the judge built once (Triton's launchers, its source
    hash). Only where the engine runs as root, which is when candidates get a uid of their own."""
    if os.geteuid() != 0:
        return []
    try:
        dirs = cache_dirs()
    except CacheFolderError:
        return []
    return [p for p in dirs.values() if p.stat().st_mode & 0o005 != 0o005]


def _unusable(name: str, exc: OSError) -> CacheFolderError:
    value = os.environ.get(name)
    where = f"{name}={value}" if value else f"{exc.filename} (the default for {name})"
    why = (
        "a file is in the way"
        if isinstance(exc, (FileExistsError, NotADirectoryError))
        else exc.strerror or str(exc)
    )
    return CacheFolderError(
        f"{where}: cannot make the build cache folder there ({why}); point {name} "
        f"at a folder you can write{', or unset it' if value else ''}"
    )


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def profile_folder() -> set[Path]:
    """Where workers dump their cProfile files when a bench asks ($KERNELEVO_WORKER_PROFILE,
    bench/profile_verdict.py): bound writable into every sandbox then, so a bench setting only,
    never set when verdicts matter (a candidate could write there)."""
    folder = os.environ.get("KERNELEVO_WORKER_PROFILE")
    return {Path(folder).resolve()} if folder and os.path.isdir(folder) else set()


def hidden_paths() -> list[Path]:
    """Files a worker must never see even where a folder holding them is bound: key configs."""
    paths = [Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "kernelevo"]
    if os.environ.get("KERNELEVO_CONFIG"):
        paths.append(Path(os.environ["KERNELEVO_CONFIG"]).expanduser())
    return [p.resolve() for p in paths]


def task_roots(task_path: Any) -> set[Path]:
    """The folders a generated task puts on sys.path for the user's own modules (its header's
    `sys.path root:` line, written by targets/extract.py)."""
    if not isinstance(task_path, str) or not os.path.isfile(task_path):
        return set()
    with open(task_path, encoding="utf-8", errors="replace") as f:
        head = f.read(4096)
    for line in head.splitlines():
        if line.startswith("sys.path root: "):
            return {
                Path(p).resolve()
                for p in line[len("sys.path root: ") :].split(os.pathsep)
                if os.path.isdir(p)
            }
    return set()
