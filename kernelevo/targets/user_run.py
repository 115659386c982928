"""Running the user's own code to learn its inputs: a child process, time-limited, on the CPU,
and sandboxed where this machine can (kernelevo.sandbox): the workspace read-only, one
writable folder for the answer, no network, no view of keys.

Scripts found in the workspace were not named by the user, so they never see a GPU and
never write anything but the answer; where no sandbox can start they still run (as the
user's own code), with the GPUs hidden, and the task header says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_CPU_ENV = {"CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "1", "PYTHONDONTWRITEBYTECODE": "1"}
_sandbox_ok: bool | None = None


@dataclass
class UserRun:
    returncode: int
    stdout: str
    stderr: str
    sandboxed: bool
    timed_out: bool = False


def sandbox_available() -> bool:
    global _sandbox_ok
    if _sandbox_ok is None:
        if os.environ.get("KERNELEVO_NO_SANDBOX") == "1":
            _sandbox_ok = False
        else:
            try:
                from kernelevo.sandbox import isolation

                _sandbox_ok = isolation().ok
            except Exception:  # no sandbox module or no bubblewrap: unsandboxed child processes
                _sandbox_ok = False
    return _sandbox_ok


def run_user_code(
    module: str,
    args: list[str],
    read_only: list[str],
    writable: str,
    timeout: float,
    cwd: str | None = None,
) -> UserRun:
    """`python -m module args...` over the user's code, in the sandbox when there is one."""
    argv = [sys.executable, "-m", module, *args]
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**_CPU_ENV, "PYTHONPATH": package_root}
    if sandbox_available():
        return _sandboxed(argv, env, read_only, writable, timeout)
    full = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_TOKEN")) and k != "KERNELEVO_CONFIG"
    }
    full.update(env)
    full["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p
    )
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, env=full, cwd=cwd or writable
        )
    except subprocess.TimeoutExpired as exc:
        return UserRun(124, _text(exc.stdout), _text(exc.stderr), False, True)
    return UserRun(proc.returncode, proc.stdout, proc.stderr, False)


def _sandboxed(
    argv: list[str], env: dict[str, str], read_only: list[str], writable: str, timeout: float
) -> UserRun:
    from kernelevo.sandbox import Limits, SandboxSpec, spawn

    spec = SandboxSpec(
        argv,
        env=env,
        read_only=[Path(p) for p in dict.fromkeys(read_only) if os.path.exists(p)],
        writable=[Path(writable)],
        limits=Limits(memory_bytes=16 << 30, cpu_seconds=int(timeout) + 30),
    )
    with spawn(spec, channel=False) as proc:
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return UserRun(124, proc.output.text(), "", True, True)
        text = proc.output.text()
    return UserRun(code, text, text, True)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data
