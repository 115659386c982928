"""The engine's side of per-candidate build caches (runner/candidate_cache.py is the sandbox's).

Each sandbox that runs candidate code binds one root of its own writable. A candidate's folder
is made fresh (an unguessable name) in the compile worker's root just before its compile, moved
out of that root into a holding folder no sandbox binds as soon as the compile answers (so the
next candidate compiled there cannot reach it), and copied into the runner host's root only
while that candidate is verified; the runner root holds nothing else meanwhile. Held folders are
named by their content key: only a compile or run of the same candidate and task ever reads one,
so a candidate's own planted files can only reach itself.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import secrets
import shutil
import tempfile
import threading
from pathlib import Path

_holding: Path | None = None
# compile-ahead threads (one per compile worker) hold, seed and install at once: a folder is
# never copied while another thread moves or evicts it
_lock = threading.RLock()


def make_root(prefix: str) -> Path:
    """A root folder one sandbox binds writable."""
    return Path(tempfile.mkdtemp(prefix=prefix)).resolve()


def fresh(root: Path) -> Path:
    path = root / secrets.token_hex(16)
    path.mkdir()
    own_like(root, path)
    return path


def own_like(root: Path, path: Path) -> None:
    """`path` and everything in it owned by whoever owns `root` (the sandbox's own uid)."""
    st = os.stat(root)
    if st.st_uid == os.geteuid():
        return
    for folder, dirs, files in os.walk(path):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            with contextlib.suppress(OSError):
                os.lchown(name, st.st_uid, st.st_gid)


def holding() -> Path:
    """This engine process's private folder for compiled candidates between compile and run."""
    global _holding
    with _lock:
        if _holding is None or not _holding.is_dir():
            _holding = Path(tempfile.mkdtemp(prefix="kernelevo-compiled-")).resolve()
            atexit.register(shutil.rmtree, _holding, True)
        return _holding


def content_key(*parts: bytes | str) -> str:
    """What a compile depends on (candidate and task source, backend, arch, size): a held folder
    is only ever handed back to a compile or a run of the same content."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def held(key: str) -> Path | None:
    path = holding() / key
    return path if path.is_dir() else None


def seed(folder: Path, key: str) -> None:
    """Start a compile from what the same content's last compile left (its own cache hits)."""
    with _lock:
        earlier = held(key)
        if earlier is not None:
            shutil.copytree(earlier, folder, symlinks=True, dirs_exist_ok=True)
    if earlier is not None:
        own_like(folder.parent, folder)


def hold(folder: Path, key: str | None = None, keep: int = 64) -> Path:
    """Move a compiled candidate's folder out of the compile sandbox's reach (under its content
    key: a later compile or run of the same content starts from it); at most `keep` are held."""
    with _lock:
        target = holding() / (key or folder.name)
        shutil.rmtree(target, ignore_errors=True)
        try:
            os.rename(folder, target)
        except OSError:  # another file system: copy, then remove
            shutil.copytree(folder, target, symlinks=True)
            shutil.rmtree(folder, ignore_errors=True)
        os.utime(target)
        entries = sorted(holding().iterdir(), key=lambda p: p.stat().st_mtime)
        for old in entries[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
        return target


def install(held_folder: Path | None, root: Path) -> Path:
    """Empty `root` (nothing an earlier candidate left stays), then copy `held_folder` (or make a
    fresh folder) into it: the folder the next candidate process uses as all its build caches.
    A copy, so what the run adds never reaches the held folder."""
    clear(root)
    target = fresh(root)
    copied = False
    with _lock:
        if held_folder is not None and Path(held_folder).is_dir():
            shutil.copytree(held_folder, target, symlinks=True, dirs_exist_ok=True)
            copied = True
    if copied:
        own_like(root, target)  # compiled under the compile sandbox's uid
    return target


def clear(root: Path) -> None:
    for entry in os.listdir(root) if root.is_dir() else []:
        path = root / entry
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def discard(folder: Path | str | None) -> None:
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def built_artefacts(folder: str) -> set[str]:
    """Compiled artefacts in a candidate's cache folder (cubins, launchers, extension builds)."""
    keep = (".cubin", ".so", ".hsaco")
    return {
        os.path.relpath(os.path.join(d, f), folder)
        for d, _, files in os.walk(folder)
        for f in files
        if f.endswith(keep)
    }
