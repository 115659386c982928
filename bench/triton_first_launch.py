"""Where a fresh candidate process's first Triton launch spends its time, as the runner host makes
one: forked from a parent that imported torch and Triton without starting CUDA, with a Triton
cache folder of its own (each candidate gets a fresh one).

The child times, in order: the CUDA context (the host's spare child makes it before a candidate
arrives), Triton's driver utilities (`driver.active.utils`: on a cache miss a C build of Triton's
driver module), the first launch of a kernel (its compile, when no cache holds it, and its
launcher), and a second launch. Rows: a fresh folder read through `LayeredCache` over a shared
cache that already holds the kernel and the utilities, as a candidate's; a fresh folder with
nothing behind it; the warm folder itself; then, after the parent hashed Triton's sources as the
runner host does before it forks (`hash_triton`), the candidate's folder again; and that after
the parent also built the utilities (the child inherits the loaded module). Each row is the
median of --repeat children; every child checks its output. `--profile N`: the N functions with
the most cumulative time in the first launch of the host's row (cProfile). Needs a GPU.

    python3 bench/triton_first_launch.py [--repeat 5] [--profile 15]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)
"""

STEPS = ("context", "driver_utils", "first_launch", "second_launch")


def child(cache: str, kernel_file: str, base: str | None, profile: int = 0) -> dict[str, Any]:
    """Run in the forked child: each step's seconds, and whether the output is right."""
    if base:  # the runner's own set-up: `cache` first, read through to the shared `base`
        from kernelevo.runner import candidate_cache

        os.environ["TRITON_CACHE_DIR"] = base
        candidate_cache.use(cache)
    else:
        os.environ["TRITON_CACHE_DIR"] = cache
    import importlib.util

    import torch
    import triton

    out: dict[str, Any] = {}
    t = time.perf_counter()
    x = torch.zeros(4096, device="cuda")
    torch.cuda.synchronize()
    out["context"] = time.perf_counter() - t
    t = time.perf_counter()
    triton.runtime.driver.active.utils  # noqa: B018 - the access builds or loads the module
    out["driver_utils"] = time.perf_counter() - t
    spec = importlib.util.spec_from_file_location("first_launch_kernel", kernel_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for step in ("first_launch", "second_launch"):
        profiler = cProfile.Profile() if profile and step == "first_launch" else None
        t = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        module.add_one[(4,)](x, x.numel(), BLOCK=1024)
        torch.cuda.synchronize()
        out[step] = time.perf_counter() - t
        if profiler is not None:
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(profile)
            out["profile"] = text.getvalue()
    out["correct"] = float(bool((x == 2.0).all()))
    return out


def fork_child(
    cache: str, kernel_file: str, base: str | None = None, profile: int = 0
) -> dict[str, Any]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            result = json.dumps(child(cache, kernel_file, base, profile))
        except BaseException as exc:  # the parent prints what failed
            result = json.dumps({"error": f"{type(exc).__name__}: {exc}"[:300]})
        os.write(write, result.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    os.waitpid(pid, 0)
    return json.loads(text or '{"error": "the child printed nothing"}')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", type=int, default=0, help="print the top N of a first launch")
    args = ap.parse_args()
    import torch  # noqa: F401 - imported before forking, as the runner host does
    import triton  # noqa: F401

    if not Path("/dev/nvidiactl").exists():  # asking torch would start CUDA before the forks
        print("triton_first_launch: needs a GPU (no /dev/nvidiactl here)")
        return 2
    work = Path(tempfile.mkdtemp(prefix="triton-first-launch-"))
    kernel_file = work / "kernel.py"
    kernel_file.write_text(KERNEL)
    rows: dict[str, list[dict[str, Any]]] = {
        "candidate folder": [],
        "nothing cached": [],
        "warm folder": [],
        "host: key hashed": [],
        "+ utils before fork": [],
    }
    warm = str(work / "warm-cache")
    fork_child(warm, str(kernel_file))  # fills the warm cache folder (kernel and utilities)
    for i in range(args.repeat):
        rows["candidate folder"].append(fork_child(str(work / f"own-{i}"), str(kernel_file), warm))
        rows["nothing cached"].append(fork_child(str(work / f"cold-{i}"), str(kernel_file)))
        rows["warm folder"].append(fork_child(warm, str(kernel_file)))
    from triton.backends.nvidia.driver import CudaUtils

    from kernelevo.runner.preload import hash_triton

    t = time.perf_counter()
    hash_triton()  # as the runner host does before it forks any child
    hashed = time.perf_counter() - t
    for i in range(args.repeat):
        profile = args.profile if i == 0 else 0
        rows["host: key hashed"].append(
            fork_child(str(work / f"host-{i}"), str(kernel_file), warm, profile)
        )

    os.environ["TRITON_CACHE_DIR"] = str(work / "parent-cache")
    t = time.perf_counter()
    CudaUtils()  # builds or loads Triton's driver module in the parent; starts no CUDA context
    built = time.perf_counter() - t
    for i in range(args.repeat):
        rows["+ utils before fork"].append(
            fork_child(str(work / f"pre-{i}"), str(kernel_file), warm)
        )
    for results in rows.values():
        for r in results:
            if "profile" in r:
                print(r.pop("profile"))
    print(f"parent: Triton's sources hashed in {hashed:.3f} s, then its driver utilities built")
    print(f"before forking in {built:.3f} s")
    print(f"{'parent':<20}" + "".join(f"{s:>15}" for s in STEPS) + f"{'correct':>9}")
    for name, results in rows.items():
        errors = [r["error"] for r in results if "error" in r]
        if errors:
            print(f"{name:<20}failed: {errors[0]}")
            continue
        cells = [statistics.median(r[s] for r in results) for s in STEPS]
        ok = sum(r["correct"] == 1.0 for r in results)
        print(f"{name:<20}" + "".join(f"{c:>15.3f}" for c in cells) + f"{ok:>6}/{len(results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
