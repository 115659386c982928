"""`kernelevo doctor`: what this machine can do, and what that means for the user."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "doctor",
        help="report what this machine can do (GPU, CUDA, Triton, the CUDA fast path, API keys, candidate isolation)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from kernelevo.measure.machine import probe
    from kernelevo.sandbox import isolation

    m = probe()
    interp = _interpreter_works() if m.triton else False
    iso = isolation()
    if args.json:
        print(json.dumps({**asdict(m), "triton_interpreter": interp, "isolation": iso.to_dict()}))
        return 0

    def yes(b: bool) -> str:
        return "yes" if b else "no"

    print(f"GPU:                {', '.join(m.gpus) or f'none found ({m.gpu_problem})'}")
    print(f"CUDA driver:        {m.driver or 'none'}")
    print(f"nvcc (toolkit):     {m.nvcc or 'not found'}")
    print(f"NVRTC:              {m.nvrtc or 'not found (pip install nvidia-cuda-nvrtc)'}")
    print(f"torch:              {m.torch or 'not installed'}")
    print(f"triton:             {m.triton or 'not installed'} (interpreter works: {yes(interp)})")
    compilers = " + nvcc" if m.nvrtc and m.nvcc else ("" if m.nvrtc else "nvcc")
    compilers = ("NVRTC" + compilers) if m.nvrtc else compilers
    if compilers:
        fast_path = (
            f"ready ({compilers}, driver)" if m.has_gpu else f"compile-only ({compilers}; no GPU)"
        )
    else:
        fast_path = "unavailable (no NVRTC, no nvcc)"
    print(f"CUDA fast path:     {fast_path}")
    for k, v in m.keys.items():
        print(f"{k + ':':<20}{'set' if v else 'not set'}")
    if iso.ok:
        print(
            f"isolation:          sandbox ({iso.tool}: own PID, network, IPC and mount namespaces, read-only "
            f"system, one scratch folder; {', '.join(iso.controls)})"
        )
        print(f"candidates run as:  {iso.user}")
    else:
        print(f"isolation:          none: {iso.reason}")
    from kernelevo.worker.bytecode import describe

    print(f"torch bytecode:     {describe()}")
    print()
    if m.has_gpu:
        print("Candidates run and are timed on the GPU.")
    else:
        print(
            "No GPU: Triton candidates are checked in Triton's interpreter on small shapes and compiled ahead of"
            " time for sm_90; CUDA candidates are compiled but not run. Speed is not measured."
        )
    if not m.nvcc and not m.nvrtc:
        print(
            "No NVRTC and no nvcc: CUDA candidates cannot be compiled here; pip install nvidia-cuda-nvrtc"
            " for the fast path, or install the CUDA toolkit."
        )
    elif not m.nvcc:
        print(
            "No nvcc: the fast path compiles with NVRTC; load_inline candidates, and fast-path sources that"
            " need host headers, cannot be compiled here (install the CUDA toolkit for them)."
        )
    if iso.ok and iso.detail.get("uid") not in (None, 0):
        from kernelevo.worker.sandbox_view import unreadable_caches

        for folder in unreadable_caches():
            print(
                f"{folder}: candidates, each run as a uid of its own, cannot read this build cache,"
                f" so each rebuilds what the judge built once; chmod 755 {folder}"
            )
    if not iso.ok:
        print(
            "Candidates cannot be sandboxed here: verify and optimize refuse to run them unless you pass"
            " --no-sandbox (verdicts made so are marked and never cached)."
        )
    print(_search_line())
    return 0


def _search_line() -> str:
    """What `kernelevo optimize` searches with, as it decides it: the config file (its provider
    and keys, KERNELEVO_CONFIG included) before the environment's keys."""
    from kernelevo.llm import LLMError
    from kernelevo.llm.provider_config import config_path
    from kernelevo.optimize import default_provider

    try:
        provider = default_provider()
    except LLMError as exc:
        return f"The model configuration cannot be used: {exc}"
    if provider == "offline":
        return (
            "No API key: `kernelevo optimize` uses the offline search (templates, Inductor seeds, parameter"
            " search). Set ANTHROPIC_API_KEY or OPENAI_API_KEY to search with a model."
        )
    where = config_path()
    source = f"the config file {where}" if where.is_file() else "its API key in the environment"
    return f"Model search: `kernelevo optimize` asks {provider} ({source}); --provider offline does not."


def _interpreter_works() -> bool:
    import subprocess
    import sys

    code = (
        "import torch, triton, triton.language as tl\n"
        "@triton.jit\ndef k(p):\n    tl.store(p, tl.load(p) + 1)\n"
        "x = torch.zeros(1); k[(1,)](x); assert x.item() == 1\n"
    )
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "probe.py")
        with open(path, "w") as f:
            f.write(code)
        try:
            r = subprocess.run(
                [sys.executable, path],
                env={**os.environ, "TRITON_INTERPRET": "1"},
                capture_output=True,
                timeout=120,
            )
        except subprocess.TimeoutExpired:
            return False
    return r.returncode == 0
