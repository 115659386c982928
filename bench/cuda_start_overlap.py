"""Whether a worker can start CUDA while it imports torch: seconds to a first CUDA tensor in a fresh
Python, with CUDA's start after `import torch` (as workers do now) and with the driver initialised
and the primary context retained from a thread that runs during the import (ctypes calls release
the GIL; torch's runtime then finds the primary context made). Each row is the median of
--repeat fresh processes, on a GPU machine.

    python3 bench/cuda_start_overlap.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import ctypes, json, threading, time, sys
t0 = time.perf_counter()
marks = {}
def start_cuda():
    s = time.perf_counter()
    cu = ctypes.CDLL("libcuda.so.1")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    ok = cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
    ok = ok and cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    marks["driver_thread_s"] = time.perf_counter() - s
    marks["driver_ok"] = ok
early = sys.argv[1] == "overlap"
thread = threading.Thread(target=start_cuda) if early else None
if thread:
    thread.start()
import torch
marks["import_torch_s"] = time.perf_counter() - t0
if thread:
    thread.join()
marks["joined_s"] = time.perf_counter() - t0
x = torch.ones(1024, device="cuda") * 2
torch.cuda.synchronize()
marks["first_cuda_tensor_s"] = time.perf_counter() - t0
marks["right"] = bool((x == 2).all())
print(json.dumps(marks))
"""


def run(mode: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode], capture_output=True, text=True, timeout=120
    )
    if out.returncode != 0:
        raise SystemExit(f"{mode}: the child failed: {out.stderr[-400:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows: dict[str, list[dict[str, float]]] = {"after_import": [], "overlap": []}
    for _ in range(max(1, args.repeat)):  # interleaved: a drift shows in both rows
        for mode, got in rows.items():
            got.append(run(mode))
    for mode, got in rows.items():
        med = {
            k: round(statistics.median(r[k] for r in got if k in r), 3)
            for k in got[0]
            if isinstance(got[0][k], float)
        }
        print(f"{mode:<13} n={len(got)} {json.dumps(med)} right={all(r['right'] for r in got)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
