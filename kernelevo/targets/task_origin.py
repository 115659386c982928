"""Where a built task came from, read back from its header: the user's file, the target, and the
hash of the target's code, so a task whose code has not changed is reused instead of rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import time

from kernelevo.targets.detect import analyze_file
from kernelevo.targets.model import Target

ORIGIN_KEYS = (
    "Source file",
    "Target id",
    "Source hash",
    "Inputs from",
    "sys.path root",
    "CPU sizes",
)


_NAME_MAX = 200  # below 255 bytes, with room for the `.edited-<time>` a kept copy adds


def task_path_for(out: str, user_file: str, t: Target) -> str:
    """One task file per (file, target): two `model.py` in different folders never share one."""
    stem = os.path.splitext(os.path.basename(user_file))[0]
    where = hashlib.sha1(os.path.realpath(user_file).encode()).hexdigest()[:6]
    qual = re.sub(r"[^A-Za-z0-9_]", "_", t.qualname)
    name = f"{stem}__{qual}__{where}.py"
    if len(name.encode()) > _NAME_MAX:  # a file system's limit on one name (255 bytes)
        qual = f"{qual[:60]}_{hashlib.sha1(t.qualname.encode()).hexdigest()[:6]}"
        name = f"{stem.encode()[:60].decode(errors='ignore')}__{qual}__{where}.py"
    return os.path.join(out, name)


def task_origin(task_path: str) -> dict[str, str]:
    """Where a task built by `kernelevo task` came from, read back from its header (empty if not one)."""
    try:
        with open(task_path, encoding="utf-8") as fh:
            head = fh.read(4000)
    except OSError:
        return {}
    if not head.startswith('"""KernelEvo task:'):
        return {}
    head = head.split('"""', 2)[1]
    out: dict[str, str] = {}
    for line in head.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key in ORIGIN_KEYS:
            out[key] = value.strip()
    return out


def reusable_task(
    user_file: str, key: str, out_dir: str | None = None
) -> tuple[str, Target] | None:
    """The task built before for this target, if its code has not changed since."""
    if not os.path.isfile(user_file) or user_file.endswith((".cu", ".cuh")):
        return None
    a = analyze_file(user_file)
    t = a.detection().find(key)
    if t is None:
        return None
    path = task_path_for(out_dir or os.path.join(os.getcwd(), ".kernelevo", "tasks"), user_file, t)
    origin = task_origin(path)
    if origin.get("Source hash") == t.source_hash and origin.get("Target id") == t.id:
        return path, t
    return None


DIGEST = "# kernelevo task digest: "  # the last line of a task as KernelEvo wrote it


def stamped(text: str) -> str:
    """The task's text with its digest as the last line, so a rebuild can tell a task the user
    edited from the one KernelEvo wrote."""
    return f"{text}{DIGEST}{hashlib.sha256(text.encode()).hexdigest()[:16]}\n"


def keep_edited(path: str) -> str | None:
    """Before a task file is written again: a file there that is not as KernelEvo wrote it (the
    user edited it, or it predates the digest) is kept beside it, renamed so that no search takes
    it for a task; returns the new name, said to the user on stderr."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    body, _, last = text.rstrip("\n").rpartition("\n")
    if last.startswith(DIGEST) and stamped(body + "\n") == text:
        return None
    kept = f"{path}.edited-{time.strftime('%Y%m%d-%H%M%S')}"
    n = 1
    while os.path.exists(kept):
        n += 1
        kept = f"{path}.edited-{time.strftime('%Y%m%d-%H%M%S')}-{n}"
    os.replace(path, kept)
    print(
        f"kernelevo: {path} was not as KernelEvo wrote it (edited?); it is kept as {kept}",
        file=sys.stderr,
    )
    return kept
