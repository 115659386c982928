"""Paths, machine facts and the CLI runner shared by the tests (import from here, not from conftest)."""

import os
import subprocess
import sys
from pathlib import Path

from kernelevo.measure.machine import probe

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CANDIDATES = ROOT / "tests" / "candidates"

HAS_GPU = probe().has_gpu
DEVICE = "cuda" if HAS_GPU else "cpu"


def run_kernelevo(args, cwd, env=None, *, wait=True, timeout=600):
    """`python -m kernelevo ARGS` in `cwd`, with no provider keys or config from the developer's machine."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    e.update(env or {}, PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(Path(cwd) / "xdg"))
    cmd = [sys.executable, "-m", "kernelevo", *map(str, args)]
    if not wait:
        return subprocess.Popen(
            cmd,
            cwd=cwd,
            env=e,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    return subprocess.run(cmd, cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)


def fresh_python(code, *args, cwd=ROOT, env=None, inherit=True, timeout=120):
    """`python -c CODE ARGS` in a new interpreter with this checkout first on the path: what a new
    process imports or starts is what these tests ask about. `inherit=False` gives it only PATH
    (and `env`) instead of this process's environment."""
    base = dict(os.environ) if inherit else {"PATH": "/usr/bin:/bin"}
    base.update(env or {}, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        cwd=cwd,
        env=base,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def compiled_for_sm90(verdict) -> bool:
    """The candidate's kernels compiled for Hopper: ahead of the run, or after it for launches the
    compile-ahead pass did not reach."""
    return any(
        (c.name == "aot_compile_sm90" and c.passed)
        or (c.name == "compiled_ahead" and c.passed and c.detail.get("kernels"))
        for c in verdict.checks
    )
