"""How well this machine can isolate candidates: what `kernelevo doctor` reports and what a
verdict records.

The probe starts one real sandbox and asks it what it sees (its PID, network, whether the
system is writable); a flag check is not evidence. The answer is cached per process.
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from kernelevo.sandbox.spec import Limits, SandboxSpec

_PROBE = """
import json, os, socket
seen = {"pid": os.getpid(), "processes": len([p for p in os.listdir('/proc') if p.isdigit()]),
        "uid": os.getuid()}
with open("/proc/self/status") as f:
    seen["capabilities"] = [l.split()[1] for l in f if l.startswith("CapEff")][0]
try:
    socket.create_connection(("1.1.1.1", 53), timeout=0.5); seen["network"] = True
except OSError:
    seen["network"] = False
try:
    open("/usr/.kernelevo-probe", "w"); seen["system_writable"] = True
except OSError:
    seen["system_writable"] = False
print(json.dumps(seen))
"""


@dataclass
class Isolation:
    """`level` is 'sandbox' (bubblewrap namespaces + limits), or 'none' (candidates would run
    unisolated); `reason` says why when it is not 'sandbox'."""

    level: str
    reason: str = ""
    tool: str = ""
    controls: list[str] = field(default_factory=list)
    detail: dict[str, object] = field(default_factory=dict)

    @property
    def user(self) -> str:
        """Who candidate code runs as inside the sandbox, in words."""
        uid = self.detail.get("uid")
        if uid is None:
            return "unknown"
        return "uid 0 without capabilities" if uid == 0 else f"uid {uid}, unprivileged"

    @property
    def ok(self) -> bool:
        return self.level == "sandbox"

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "user": self.user}


_probing = threading.Lock()


def isolation() -> Isolation:
    """Start one sandbox and report what it could and could not do: once per process, also when
    the workers of an evaluator, starting side by side, all ask at the same moment."""
    with _probing:
        return _probe_isolation()


@lru_cache(maxsize=1)
def _probe_isolation() -> Isolation:
    import shutil
    import subprocess

    from kernelevo.sandbox.sandbox_process import SandboxError, spawn

    bwrap = shutil.which("bwrap")
    if not bwrap:
        return Isolation(
            "none", "bubblewrap (bwrap) is not installed: install the `bubblewrap` package"
        )
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout.strip()
    spec = SandboxSpec(  # built as a candidate's sandbox is: under a uid of its own where root starts it
        [sys.executable, "-I", "-c", _PROBE], limits=Limits(memory_bytes=4 << 30), unprivileged=True
    )
    try:
        with spawn(spec, channel=False) as proc:
            code = proc.wait(timeout=60)
            text = proc.output.text()
            controls = ["rlimits", *(f"cgroup {c}" for c in proc.cgroup.controls)]
    except (SandboxError, subprocess.TimeoutExpired) as exc:
        return Isolation("none", f"the sandbox did not start: {exc}", version)
    try:
        seen = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Isolation(
            "none", f"the sandbox did not start (exit {code}): {text.strip()[-300:]}", version
        )
    problems = [
        what
        for what, bad in (
            ("it can reach the network", seen.get("network")),
            ("it can write the system", seen.get("system_writable")),
            ("it sees other processes", seen.get("processes", 0) > 3),
            ("it keeps capabilities", int(str(seen.get("capabilities") or "0"), 16) != 0),
        )
        if bad
    ]
    if problems:
        return Isolation(
            "none", "the sandbox is incomplete: " + ", ".join(problems), version, controls, seen
        )
    return Isolation("sandbox", "", version, controls, seen)


def refusal(no_sandbox: bool) -> str | None:
    """The one-line reason verification must refuse here, or None when it may go on."""
    if no_sandbox:
        return None
    found = isolation()
    if found.ok:
        return None
    return f"candidates cannot be sandboxed here ({found.reason}); pass --no-sandbox to run them unisolated"


_unsandboxed = False


def allow_unsandboxed(allowed: bool = True) -> None:
    """The user's explicit `--no-sandbox`: workers started from now on run unisolated."""
    global _unsandboxed
    _unsandboxed = allowed


def sandbox_wanted() -> bool:
    """True unless `--no-sandbox` (or KERNELEVO_NO_SANDBOX=1, how a search started by the editor
    inherits the choice) was given; says nothing of whether this machine can isolate."""
    import os

    return not (_unsandboxed or os.environ.get("KERNELEVO_NO_SANDBOX") == "1")


def use_sandbox() -> bool:
    """Whether workers are isolated: `sandbox_wanted()`. Raises SandboxError with the refusal when
    isolation is wanted but this machine cannot provide it (the probe, run once)."""
    from kernelevo.sandbox.sandbox_process import SandboxError

    if not sandbox_wanted():
        return False
    reason = refusal(False)
    if reason:
        raise SandboxError(reason)
    return True
