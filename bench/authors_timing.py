"""Time replayed kernels by their authors' published profiler, to tell a protocol difference from a wrong figure.

KernelBenchFiltered publishes a profiler (simple_profiler.py) beside its speedups: the model as
constructed (training mode), inputs moved to the GPU once, 10 warm-up calls, then 100 calls each
timed on the host clock between two device synchronisations, the mean taken; speedup = the
reference's mean over the candidate's. Ours times on the device with launch latency hidden, L2
flushed and input sets rotated (kernelevo/measure/timing.py), the model in eval mode. This
script repeats that protocol (our code, written after reading theirs) for every row
`bench/replay.py` timed, each kernel in its own sandboxed GPU process, one on the GPU at a time
(its first calls, which compile and autotune, included) while the next ones import, and prints
per kernel and overall how far the published speedup is from ours and from that protocol's here.

Usage (on a GPU machine, after a replay): python3 bench/authors_timing.py --rows OUT/replay.json
    [--lanes 4] [--out OUT/authors_timing.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REPLAY = ROOT / "bench" / "replay"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from replay import COMPARABLE_GPUS, ratio_summary, timed_rows  # noqa: E402

PROFILE = r"""
import importlib.util, json, sys, time
import torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

device = sys.argv[3]
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

def mean_ms(model, inputs, warmup=10, runs=100):
    with torch.no_grad():
        for _ in range(warmup):
            model(*inputs)
        times = []
        for _ in range(runs):
            sync()
            start = time.perf_counter()
            model(*inputs)
            sync()
            times.append(time.perf_counter() - start)
    return 1e3 * sum(times) / len(times)

task, cand = load(sys.argv[1], "task"), load(sys.argv[2], "candidate")
init = list(getattr(task, "get_init_inputs", lambda: [])())
inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
models = task.Model(*init).to(device), cand.ModelNew(*init).to(device)
sync()
print("ready", flush=True)
sys.stdin.readline()
with torch.no_grad():  # the first calls compile and autotune: on the GPU, so only once it is ours
    for m in models:
        m(*inputs)
eager, candidate = (mean_ms(m, inputs) for m in models)
print(json.dumps({"eager_ms": eager, "candidate_ms": candidate}), flush=True)
"""

GPU_ALONE = threading.Lock()  # one kernel on the GPU at a time; the others import meanwhile


def profile(row: dict[str, Any], timeout: float, device: str = "cuda") -> dict[str, Any]:
    """The authors' protocol for one replayed kernel, in a sandboxed process of its own (`device`
    cpu: Triton's interpreter, for tests). It imports both files and builds both models, says
    ready, and runs them (first calls, which compile and autotune, then the protocol) when no
    other kernel's process uses the GPU."""
    from kernelevo.sandbox import spawn
    from kernelevo.worker.pool import Worker
    from kernelevo.worker.sandbox_view import cache_dirs

    worker = Worker(device, module="kernelevo.runner.host")  # a candidate runner's sandbox
    spec = worker.spec()
    files = Path(tempfile.mkdtemp(prefix="kernelevo-authors-"))  # readable by the sandbox's uid
    files.chmod(0o755)
    for name, key in (("task.py", "task"), ("candidate.py", "candidate")):
        shutil.copyfile(REPLAY / row[key], files / name)
        (files / name).chmod(0o644)
    argv = [
        sys.executable,
        "-c",
        PROFILE,
        str(files / "task.py"),
        str(files / "candidate.py"),
        device,
    ]
    env = {k: v for k, v in spec.env.items() if k not in cache_dirs()}  # builds in its own home
    seen = [*spec.read_only, files]
    proc = spawn(dataclasses.replace(spec, argv=argv, env=env, read_only=seen))
    stop = threading.Timer(timeout, proc.kill)  # a kernel that hangs: reported on its row
    stop.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() == b"ready":
            with GPU_ALONE:
                proc.stdin.write(b"go\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
        proc.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        line = b""
    finally:
        stop.cancel()
        proc.close()
        worker.close()  # its inbox and cache folder (the process was never started by it)
        shutil.rmtree(files, ignore_errors=True)
    if not line.startswith(b"{"):
        text = proc.output.text()
        return {"error": text[-300:].replace("\n", " | ") or "no output"}
    got = json.loads(line)
    return {**got, "speedup": got["eager_ms"] / got["candidate_ms"]}


def report(rows: list[dict[str, Any]]) -> str:
    timed = [r for r in rows if r.get("authors_protocol", {}).get("speedup")]
    lines = [
        f"{'kernel':<14} {'authors':>8} {'ours':>8} {'theirs here':>12} {'eager ms here':>14}",
    ]
    for r in timed:
        a = r["authors_protocol"]
        lines.append(
            f"{r['id']:<14} {r['author_speedup']:>7.2f}x {r['speedup']:>7.2f}x "
            f"{a['speedup']:>11.2f}x {a['eager_ms']:>14.4f}"
        )
    failed = [r for r in rows if "error" in r.get("authors_protocol", {})]
    for r in failed:
        lines.append(f"{r['id']:<14} not timed here: {r['authors_protocol']['error'][:160]}")
    ours = ratio_summary([r["speedup"] / r["author_speedup"] for r in timed])
    here = ratio_summary([r["authors_protocol"]["speedup"] / r["author_speedup"] for r in timed])
    lines += [
        f"{len(timed)} kernels timed both ways ({len(failed)} failed in the authors' protocol):",
        f"  our protocol / authors' figure: geomean {ours[0]:.3f}, {ours[1]} within ±10 %",
        f"  authors' protocol here / authors' figure: geomean {here[0]:.3f}, {here[1]} within ±10 %",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=Path, required=True, help="replay.json of bench/replay.py")
    ap.add_argument("--lanes", type=int, default=4)
    ap.add_argument("--timeout-s", type=float, default=120.0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    rows = json.loads(args.rows.read_text())
    todo = [r for gpu in COMPARABLE_GPUS for r in timed_rows(rows, gpu)]  # those replay.py compares
    with ThreadPoolExecutor(args.lanes) as pool:
        for r, got in zip(todo, pool.map(lambda r: profile(r, args.timeout_s), todo), strict=True):
            r["authors_protocol"] = got
            print(f"  {r['id']:<14} {json.dumps(got)[:160]}", flush=True)
    text = report(todo)
    print(text)
    if args.out:
        args.out.write_text(json.dumps(todo, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
