"""The sandbox on a GPU machine, in one go: the isolation probe, a GPU worker inside bubblewrap
verifying a Triton and a CUDA candidate, what a GPU worker's sandbox lets a candidate reach
(devices, host memory beyond the limit, pinned memory, daemons), and whether a CUDA IPC handle
from the engine opens inside the sandbox (the judge's data channel). Prints a table last.

Usage (on a GPU machine): python3 bench/sandbox_gpu_check.py   (~60 s on an H200 with warm caches)
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelevo.sandbox import isolation, spawn  # noqa: E402
from kernelevo.worker.pool import Worker  # noqa: E402

rows: list[tuple[str, str]] = []

GPU_ATTACK = r"""
import json, os, resource, signal, sys, time
import torch
seen = {"devices": sorted(os.listdir("/dev")), "processes": len([p for p in os.listdir("/proc") if p.isdigit()])}
x = torch.ones(1 << 28, device="cuda")  # 1 GiB on the GPU
seen["gpu_sum_ok"] = bool(x.sum().item() == float(1 << 28))
seen["data_limit_gib"] = resource.getrlimit(resource.RLIMIT_DATA)[0] / 2**30
chunks, got = [], 0
try:
    while got < (64 << 30):
        chunks.append(bytearray(256 << 20)); got += 256 << 20
except MemoryError:
    pass
seen["host_bytes_allocated_gib"] = got / 2**30
del chunks
try:
    pinned = torch.empty(int(seen["data_limit_gib"] + 1) << 30, dtype=torch.uint8, pin_memory=True)
    seen["pinned_past_limit"] = True
    del pinned
except Exception as exc:
    seen["pinned_past_limit"] = f"refused: {type(exc).__name__}"
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", "kx-gpu-daemon"])
    os._exit(0)
time.sleep(0.3)
print(json.dumps(seen), flush=True)
"""

IPC_OPEN = r"""
import json, sys
import cupy
handle = bytes.fromhex(sys.argv[1])
try:
    ptr = cupy.cuda.runtime.ipcOpenMemHandle(handle)
    mem = cupy.cuda.UnownedMemory(ptr, 4 * 1024, None)
    arr = cupy.ndarray((1024,), dtype=cupy.float32, memptr=cupy.cuda.MemoryPointer(mem, 0))
    ok = float(arr.sum()) == 1024 * 7.0
    arr *= 2
    cupy.cuda.runtime.deviceSynchronize()
    print(json.dumps({"opened": True, "read_ok": ok}))
except Exception as exc:
    print(json.dumps({"opened": False, "error": f"{type(exc).__name__}: {exc}"[:200]}))
"""


def check_isolation() -> None:
    iso = isolation()
    rows.append(("isolation", f"{iso.level} {iso.tool} {','.join(iso.controls)} {iso.reason}"))
    print(json.dumps(iso.to_dict()))


def check_verify() -> None:
    from kernelevo.evaluate import Evaluator
    from kernelevo.verify import verify_candidate

    task = ROOT / "examples" / "softmax.py"
    t0 = time.perf_counter()
    with Evaluator("cuda") as ev:
        ev.warm()
        rows.append(
            ("GPU evaluator start (2 sandboxed workers)", f"{time.perf_counter() - t0:.1f} s")
        )
        for name in ("triton_ok.py", "cuda_fast.py"):
            v = verify_candidate(
                task,
                ROOT / "tests" / "candidates" / "softmax" / name,
                evaluator=ev,
                device="cuda",
                use_cache=False,
            )
            speed = v.timings.get("speedup_eager")
            rows.append(
                (
                    f"verify softmax/{name}",
                    f"{v.status} isolation={v.isolation} {v.elapsed_s:.1f} s"
                    + (f" {speed:.2f}x eager" if speed else "")
                    + ("" if v.ok else f" {v.reason[:160]}"),
                )
            )


def check_gpu_attack() -> None:
    w = Worker("cuda")
    spec = w.spec()
    spec = dataclasses.replace(
        spec,
        argv=[sys.executable, "-c", GPU_ATTACK],
        limits=dataclasses.replace(spec.limits, memory_bytes=4 << 30),
    )
    proc = spawn(spec, channel=False)
    try:
        proc.wait(timeout=90)
    finally:
        proc.close()
        w.inbox.remove()
    text = proc.output.text()
    lines = [line for line in text.splitlines() if line.startswith("{")]
    if not lines:
        rows.append(("GPU attack", "no report: " + text[-400:].replace("\n", " | ")))
        return
    seen = json.loads(lines[-1])
    print(json.dumps(seen))
    extra = [d for d in seen["devices"] if d.startswith("nvidia")]
    rows.append(("GPU worker: /dev/nvidia* bound", " ".join(extra)))
    rows.append(
        (
            "GPU worker: other /dev entries",
            " ".join(d for d in seen["devices"] if not d.startswith("nvidia")),
        )
    )
    rows.append(("GPU worker: 1 GiB on the GPU, sum right", str(seen["gpu_sum_ok"])))
    rows.append(("GPU worker: processes visible", str(seen["processes"])))
    rows.append(
        (
            "GPU worker: host memory under RLIMIT_DATA 4 GiB",
            f"{seen['host_bytes_allocated_gib']:.2f} GiB allocated",
        )
    )
    rows.append(("GPU worker: pinned memory past the limit", str(seen["pinned_past_limit"])))
    alive = [p for p in os.listdir("/proc") if p.isdigit() and _cmd(p).find(b"kx-gpu-daemon") >= 0]
    rows.append(
        ("GPU worker: setsid daemon after kill", "survived " + ",".join(alive) if alive else "gone")
    )


def _cmd(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def check_ipc() -> None:
    import cupy

    arr = cupy.full((1024,), 7.0, dtype=cupy.float32)
    cupy.cuda.runtime.deviceSynchronize()
    handle = bytes(cupy.cuda.runtime.ipcGetMemHandle(arr.data.ptr)).hex()
    for share in (False, True):
        w = Worker("cuda")
        spec = dataclasses.replace(
            w.spec(), argv=[sys.executable, "-c", IPC_OPEN, handle], share_ipc=share
        )
        proc = spawn(spec, channel=False)
        try:
            proc.wait(timeout=60)
        finally:
            proc.close()
            w.inbox.remove()
        text = proc.output.text()
        lines = [line for line in text.splitlines() if line.startswith("{")]
        seen = json.loads(lines[-1]) if lines else {"opened": False, "error": text[-200:]}
        wrote = float(arr.sum()) == 1024 * 14.0 if seen.get("opened") else False
        arr.fill(7.0)
        rows.append(
            (
                f"CUDA IPC handle into the sandbox (share_ipc={share})",
                f"opened={seen.get('opened')} read_ok={seen.get('read_ok')} write_seen_by_engine={wrote} "
                f"{seen.get('error', '')}",
            )
        )


def main() -> int:
    for step in (check_isolation, check_verify, check_gpu_attack, check_ipc):
        t0 = time.perf_counter()
        try:
            step()
        except Exception as exc:  # one failed step still leaves the others' rows
            rows.append((step.__name__, f"FAILED {type(exc).__name__}: {exc}"[:300]))
        print(f"{step.__name__}: {time.perf_counter() - t0:.1f} s", flush=True)
    width = max(len(k) for k, _ in rows)
    print()
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
