"""Host time per launch of the CUDA fast path (argument checks, cuda.bindings' cuLaunchKernel)
against torch launching a kernel of its own, both on torch's current stream.

An empty kernel launched back to back, N times after a warm-up, timed on the host and synchronised
at the end; torch's `zero_` of a one-element tensor is the yardstick. Needs a GPU.

    python3 bench/cuda_launch.py [--launches 20000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def per_launch_us(launch: Callable[[], object], n: int) -> float:
    import torch

    for _ in range(200):
        launch()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        launch()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launches", type=int, default=20000)
    args = ap.parse_args()
    import numpy as np
    import torch

    if not torch.cuda.is_available():
        print("cuda_launch: no GPU here, nothing measured")
        return 0
    os.environ.setdefault("KERNELEVO_CACHE", tempfile.mkdtemp(prefix="kernelevo-launch-"))
    from kernelevo import cuda

    mod = cuda.compile('extern "C" __global__ void nop(float* y, int n) { if (n < 0) y[0] = 1.f; }')
    y = torch.zeros(1, device="cuda")
    n32 = np.int32(1)
    ours = per_launch_us(lambda: mod.nop(y, n32, grid=1, block=32), args.launches)
    theirs = per_launch_us(y.zero_, args.launches)
    print(f"compiled by {mod.compiler}; {args.launches} launches each")
    print(
        f"cuda_launch: kernelevo.cuda {ours:.1f} us per launch, torch zero_ {theirs:.1f} us "
        f"({ours / theirs:.2f}x torch's)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
