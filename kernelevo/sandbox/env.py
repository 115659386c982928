"""The environment a sandboxed process starts with: built from an allowlist, never copied.

A denylist misses the variable nobody thought of (a cloud token named `..._CREDS`, a config
path); here only names known to be needed are passed, and even those are dropped when their
name looks like a secret or their value contains a key the engine holds.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|CREDS|AUTH|COOKIE|SESSION", re.IGNORECASE
)
NEVER = {
    "KERNELEVO_CONFIG",
    "KERNELEVO_STORE",
    "XDG_CONFIG_HOME",
    "SSH_AUTH_SOCK",
    "LD_PRELOAD",
    "PYTHONSTARTUP",
    "PYTHONHOME",
}
NAMES = {
    "PATH",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "LD_LIBRARY_PATH",
    "CC",
    "CXX",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_LAUNCH_BLOCKING",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "PYTHONHASHSEED",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
}
PREFIXES = ("LC_", "TRITON_", "TORCH_", "TORCHINDUCTOR_", "NVIDIA_", "KERNELEVO_")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def allowed_name(name: str) -> bool:
    """True for a variable a worker may inherit from the engine's environment."""
    if name in NEVER or SECRET_NAME.search(name):
        return False
    return name in NAMES or name.startswith(PREFIXES)


def sandbox_env(
    extra: Mapping[str, str] | None = None,
    *,
    home: str = "/tmp",
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The allowlisted part of `base` (default: this process's environment), plus `extra`.

    `extra` is what the engine sets on purpose (PYTHONPATH, cache folders); it still passes
    the name and value checks, so no caller can hand a key or the config path through."""
    from kernelevo.llm.redact import contains_secret

    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if allowed_name(k)}
    env.setdefault("PATH", DEFAULT_PATH)
    env.update({"HOME": home, "TMPDIR": "/tmp", "USER": "kernelevo", "LOGNAME": "kernelevo"})
    for k, v in (extra or {}).items():
        if k not in NEVER and not SECRET_NAME.search(k):
            env[k] = v
    return {k: v for k, v in env.items() if not contains_secret(v)}
