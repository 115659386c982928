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


def compiled_for_sm90(verdict) -> bool:
    """The candidate's kernels compiled for Hopper: ahead of the run, or after it for launches the
    compile-ahead pass did not reach."""
    return any(
        (c.name == "aot_compile_sm90" and c.passed)
        or (c.name == "compiled_ahead" and c.passed and c.detail.get("kernels"))
        for c in verdict.checks
    )
