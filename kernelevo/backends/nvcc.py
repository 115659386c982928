"""The CUDA toolchain as both CUDA backends use it: find nvcc, run it under a time limit,
turn its output into a short error a model can act on.

A compiler run is untrusted work (a template can take minutes): it gets its own process
group, so a timeout kills nvcc and everything it started (cicc, ptxas, g++), not just
the driver. Importing this module is cheap: no torch.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


class CudaError(RuntimeError):
    """Base of the errors the CUDA backends raise."""


class CudaCompileError(CudaError):
    """The compiler rejected the source. `errors` holds (file, line, message) per error line."""

    def __init__(
        self, message: str, *, log: str = "", errors: list[tuple[str, int, str]] | None = None
    ) -> None:
        super().__init__(message)
        self.log = log
        self.errors = errors if errors is not None else parse_errors(message)


class CudaCompileTimeout(CudaCompileError):
    """The compiler (or a build) ran past its time limit and was killed."""


class CudaLaunchError(CudaError):
    """The driver refused a launch (bad grid/block, too much shared memory, wrong context)."""


class CudaUnavailable(CudaError):
    """CUDA cannot run here: no GPU, no driver, no nvcc, or compile-only mode."""


NOT_RUN = "compiled, not run (no GPU)"  # how a kernel built in compile-only mode answers a call


DEFAULT_TIMEOUT_S = 120.0


_compile_only_override: bool | None = None


def set_compile_only(on: bool | None) -> None:
    """Force compile-only mode on or off; None goes back to `$KERNELEVO_CUDA_COMPILE_ONLY`."""
    global _compile_only_override
    _compile_only_override = on


def compile_only() -> bool:
    """Both CUDA builds (the fast path and load_inline) compile without running where no GPU is."""
    if _compile_only_override is not None:
        return _compile_only_override
    return os.environ.get("KERNELEVO_CUDA_COMPILE_ONLY", "").strip().lower() in (
        "1",
        "true",
        "yes",
        "on",
    )


def timeout_from_env(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a number of seconds") from None
    if value <= 0:
        raise ValueError(f"{name}={raw!r}: must be positive")
    return value


def cache_dir(kind: str) -> Path:
    """`$KERNELEVO_CACHE/<kind>`, else `$XDG_CACHE_HOME/kernelevo/<kind>` (default `~/.cache`)."""
    root = os.environ.get("KERNELEVO_CACHE")
    if root:
        base = Path(root).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "kernelevo"
    return shared_folder(base / kind, top=base)


def shared_folder(path: Path, top: Path | None = None) -> Path:
    """`path`, made where missing; each folder made here from `top` (default: `path` alone) down is
    readable by other uids whatever the umask, since sandboxed candidates run as uids of their own
    and read the shared build caches. A folder that already existed keeps its mode."""
    made, p = [], path
    while not p.exists() and p != p.parent:
        made.append(p)
        if p == (top or path):
            break
        p = p.parent
    path.mkdir(parents=True, exist_ok=True)
    for folder in made:
        with contextlib.suppress(OSError):
            folder.chmod(folder.stat().st_mode | 0o055)
    return path


def find_nvcc() -> str:
    """`$KERNELEVO_NVCC`, `$CUDA_HOME/bin/nvcc`, nvcc on PATH, or /usr/local/cuda/bin/nvcc."""
    candidates = [os.environ.get("KERNELEVO_NVCC")]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(os.path.join(os.environ[var], "bin", "nvcc"))
    candidates += [shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise CudaUnavailable(
        "nvcc not found: install the CUDA toolkit, or set KERNELEVO_NVCC or CUDA_HOME"
    )


@functools.lru_cache(maxsize=8)
def _version_of(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"\bV(\d+\.\d+\.\d+)", out) or re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1] if out.strip() else "unknown"


def nvcc_version(nvcc: str | None = None) -> str:
    """e.g. '13.0.88'; part of every cache key, since a new compiler makes new code."""
    return _version_of(nvcc or find_nvcc())


@dataclass
class Completed:
    returncode: int
    output: str
    seconds: float


def run_limited(
    cmd: Sequence[str],
    *,
    timeout: float,
    cwd: str | os.PathLike | None = None,
    env: dict[str, str] | None = None,
    what: str = "nvcc",
    pass_fds: Sequence[int] = (),
) -> Completed:
    """Run `cmd` in its own process group, stdout+stderr together; kill the group on timeout.

    Raises CudaCompileTimeout when the limit is hit; a failing exit status is returned,
    not raised, so the caller can word the error.
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        list(cmd),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, _ = proc.communicate()
        text = out.decode(errors="replace") if out else ""
        raise CudaCompileTimeout(
            f"{what} ran past its {timeout:g} s time limit and was killed", log=text, errors=[]
        ) from None
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    return Completed(proc.returncode, out.decode(errors="replace"), time.monotonic() - start)


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the child's whole session: ninja puts each compiler in a process group of its own."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for _ in range(20):
        members = _session_members(proc.pid)
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _session_members(sid: int) -> list[int]:
    """Live processes whose session id is `sid` (Linux /proc; empty elsewhere)."""
    from kernelevo.sandbox.watchdog import ProcessTable

    try:
        return ProcessTable().in_session(sid)
    except OSError:
        return []


# nvcc/cudafe: "kernel.cu(12): error: ..."; gcc/clang: "main.cpp:12:5: error: ..."
_NVCC_LOC = re.compile(r"^(?P<file>[^\s:()][^:()]*?)\((?P<line>\d+)\): (?P<rest>.*)$")
_GCC_LOC = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+)(?::(?P<col>\d+))?: (?P<rest>.*)$")
_ERROR_HEAD = re.compile(
    r"(^|\s)(fatal )?error\b|^ptxas (error|fatal)|^nvcc (error|fatal)|^nvlink error|undefined reference|"
    r"undefined symbol|cannot find -l|catastrophic error",
    re.IGNORECASE,
)
_SUMMARY = re.compile(r"^\d+ errors? detected in the compilation of")


def normalise(output: str, strip_prefixes: Sequence[str] = ()) -> list[str]:
    """Lines with build folders removed and nvcc's `f(N): ` turned into `f:N: `."""
    lines = []
    for line in output.splitlines():
        for p in strip_prefixes:
            if p:
                line = line.replace(p.rstrip("/") + "/", "")
        m = _NVCC_LOC.match(line)
        if m:
            line = f"{m['file']}:{m['line']}: {m['rest']}"
        lines.append(line.rstrip())
    return lines


def _is_error(line: str) -> bool:
    m = _GCC_LOC.match(line)
    rest = m["rest"] if m else line
    if m and re.match(r"(warning|note|remark)\b", rest, re.IGNORECASE):
        return False
    if re.search(r"\s-Werror|\s-[A-Za-z]\S*error", line) and not m:
        return False  # a compiler command line echoed by ninja
    return bool(_ERROR_HEAD.search(rest))


def _is_context(line: str) -> bool:
    if not line.strip():
        return False
    if _GCC_LOC.match(line) or line.startswith(
        ("FAILED:", "ninja:", "In file included", "                 from ")
    ):
        return False
    return line[0] in " \t|" or line.lstrip().startswith(
        ("^", "|", "detected during", "instantiation")
    )


def trim_errors(
    output: str, *, strip_prefixes: Sequence[str] = (), context: int = 3, max_lines: int = 40
) -> str:
    """Keep `file:line: error` lines and a few context lines after each (source, caret).

    Warnings, notes, echoed command lines and progress are dropped. Without any error
    line, the last lines of the output are kept, since something still went wrong.
    """
    lines = normalise(output, strip_prefixes)
    kept: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _is_error(line) or _SUMMARY.match(line):
            kept.append(line)
            j = i + 1
            while j < len(lines) and j <= i + context and _is_context(lines[j]):
                kept.append(lines[j])
                j += 1
            i = j
            continue
        i += 1
    if not kept:
        kept = [x for x in lines if x.strip()][-20:]
    if len(kept) > max_lines:
        extra = len(kept) - max_lines
        kept = [*kept[:max_lines], f"... ({extra} more lines)"]
    return "\n".join(kept)


def parse_errors(message: str) -> list[tuple[str, int, str]]:
    """(file, line, text) for each located error line of a trimmed message."""
    found = []
    for line in message.splitlines():
        m = _GCC_LOC.match(line)
        if m and _is_error(line):
            text = re.sub(r"^(fatal )?error:\s*", "", m["rest"], flags=re.IGNORECASE)
            found.append((m["file"], int(m["line"]), text))
    return found


def compile_error(
    output: str, *, header: str, strip_prefixes: Sequence[str] = ()
) -> CudaCompileError:
    """A CudaCompileError whose message is `header` plus the trimmed compiler output."""
    trimmed = trim_errors(output, strip_prefixes=strip_prefixes)
    return CudaCompileError(
        f"{header}\n{trimmed}" if trimmed else header, log=output, errors=parse_errors(trimmed)
    )
