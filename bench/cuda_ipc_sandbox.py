"""Which part of the candidate sandbox stops CUDA IPC, and what crosses it: one table, on a GPU machine.

The judge's CUDA tensors reach a candidate process through files today, because on the H200
`cudaIpcOpenMemHandle` failed (`cudaErrorMapBufferObjectFailed`) in the candidate's sandbox.
This opens one exporter's memory (this process, unsandboxed) from importers that differ in one
thing at a time: a plain process, another uid, a forked child, bubblewrap with no namespace,
`--unshare-pid`, `--unshare-ipc`, both, the judge's sandbox and the candidate runner's
sandbox (uid of its own). Handles tried: a legacy IPC handle from cupy, one from PyTorch's
caching allocator (`_share_cuda_`, opened the way kernelevo/tensor_channel.py does), and a
CUDA VMM allocation exported as a POSIX file descriptor (cuMemExportToShareableHandle), which
crosses as an inherited descriptor, not as a name. Then the file transport's copies, timed:
256 MiB GPU -> /dev/shm file -> GPU, pageable and host-registered (pinned in place).

Usage (on a GPU machine): python3 bench/cuda_ipc_sandbox.py [--out DIR]   (~30 s)
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N = 1024  # float32 values, all 7.0

IMPORTER = r"""
import json, os, sys
arg = json.loads(sys.argv[1])
def main():
    import importlib
    for name in {"cupy": ["cupy"], "torch": ["torch"]}.get(arg["kind"], ["array", "cuda.bindings.driver"]):
        try:  # before another uid (the files may be root's); CUDA starts later
            importlib.import_module(name)
        except ImportError:
            pass
    if arg.get("uid"):
        u = arg["uid"]
        os.setgroups([]); os.setresgid(u, u, u); os.setresuid(u, u, u)
    if arg.get("fork"):
        import torch  # the runner host's state: torch imported, CUDA not initialised, then fork
        pid = os.fork()
        if pid:
            _, status = os.waitpid(pid, 0)
            os._exit(0)
    kind = arg["kind"]
    try:
        if kind == "cupy":
            import cupy
            ptr = cupy.cuda.runtime.ipcOpenMemHandle(bytes.fromhex(arg["handle"]))
            mem = cupy.cuda.UnownedMemory(ptr + arg.get("offset", 0), 4 * arg["n"], None)
            a = cupy.ndarray((arg["n"],), dtype=cupy.float32, memptr=cupy.cuda.MemoryPointer(mem, 0))
            ok = float(a.sum()) == arg["n"] * 7.0
        elif kind == "torch":
            import torch
            c = arg["cuda"]
            st = torch.UntypedStorage._new_shared_cuda(c["device"], bytes.fromhex(c["handle"]), c["size"], c["offset"],
                bytes.fromhex(c["ref_handle"]), c["ref_offset"],
                bytes.fromhex(c["event_handle"]) if c["event_handle"] else None, c["event_sync"])
            t = torch.empty(0, dtype=torch.float32, device=st.device)
            t.set_(st, 0, (arg["n"],), (1,))
            ok = float(t.sum()) == arg["n"] * 7.0
        else:
            try:
                from cuda.bindings import driver as cu
            except ImportError:
                from cuda import cuda as cu
            def chk(r):
                err = r[0] if isinstance(r, tuple) else r
                if int(err) != 0:
                    raise RuntimeError(str(err))
                return r[1] if isinstance(r, tuple) and len(r) == 2 else r
            chk(cu.cuInit(0)); dev = chk(cu.cuDeviceGet(0))
            ctx = chk(cu.cuDevicePrimaryCtxRetain(dev)); chk(cu.cuCtxSetCurrent(ctx))
            H = cu.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
            h = chk(cu.cuMemImportFromShareableHandle(arg["fd"], H))
            size = arg["size"]
            ptr = chk(cu.cuMemAddressReserve(size, 0, 0, 0))
            chk(cu.cuMemMap(ptr, size, 0, h, 0))
            d = cu.CUmemAccessDesc()
            d.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
            d.location.id = 0
            d.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            chk(cu.cuMemSetAccess(ptr, size, [d], 1))
            buf = bytearray(4 * arg["n"])
            import array
            chk(cu.cuMemcpyDtoH(buf, ptr, len(buf)))
            vals = array.array("f", bytes(buf))
            ok = all(v == 7.0 for v in vals)
        print(json.dumps({"opened": True, "read_ok": ok}), flush=True)
    except Exception as exc:
        print(json.dumps({"opened": False, "error": f"{type(exc).__name__}: {exc}"[:240]}), flush=True)
main()
"""


def run_plain(
    arg: dict[str, Any], extra: list[str] | None = None, fds: tuple[int, ...] = ()
) -> dict[str, Any]:
    argv = [*(extra or []), sys.executable, "-c", IMPORTER, json.dumps(arg)]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=90, pass_fds=fds)
    except subprocess.TimeoutExpired:
        return {"opened": False, "error": "timeout"}
    return _last_json(r.stdout + r.stderr)


def run_spec(module: str | None, arg: dict[str, Any], fds: tuple[int, ...] = ()) -> dict[str, Any]:
    """In the sandbox kernelevo gives the judge (module None) or the candidate runner host."""
    from kernelevo.sandbox import spawn
    from kernelevo.worker.pool import Worker

    w = Worker("cuda", module=module)
    spec = dataclasses.replace(
        w.spec(), argv=[sys.executable, "-c", IMPORTER, json.dumps(arg)], channel_fds=fds
    )
    proc = spawn(spec, channel=False)
    try:
        proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        pass
    finally:
        proc.close()
        w.close()
    return _last_json(proc.output.text())


def _last_json(text: str) -> dict[str, Any]:
    lines = [line for line in text.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"opened": False, "error": text.strip()[-240:]}


def bwrap(*flags: str) -> list[str]:
    return [shutil.which("bwrap") or "bwrap", "--bind", "/", "/", "--dev-bind", "/dev", "/dev",
            *flags, "--proc", "/proc", "--"]  # fmt: skip


def vmm_export(size_hint: int) -> tuple[int, int, Any] | None:
    """A VMM allocation filled with 7.0, exported as a POSIX fd: (fd, size, keep-alive)."""
    try:
        try:
            from cuda.bindings import driver as cu
        except ImportError:
            from cuda import cuda as cu  # type: ignore[no-redef]
    except ImportError:
        return None

    def chk(r: Any) -> Any:
        err = r[0] if isinstance(r, tuple) else r
        if int(err) != 0:
            raise RuntimeError(str(err))
        return r[1] if isinstance(r, tuple) and len(r) == 2 else r

    chk(cu.cuInit(0))
    dev = chk(cu.cuDeviceGet(0))
    ctx = chk(cu.cuDevicePrimaryCtxRetain(dev))
    chk(cu.cuCtxSetCurrent(ctx))
    prop = cu.CUmemAllocationProp()
    prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = 0
    handle_type = cu.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    prop.requestedHandleTypes = handle_type
    gran = chk(
        cu.cuMemGetAllocationGranularity(
            prop, cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM
        )
    )
    size = ((size_hint + gran - 1) // gran) * gran
    h = chk(cu.cuMemCreate(size, prop, 0))
    fd = int(chk(cu.cuMemExportToShareableHandle(h, handle_type, 0)))
    ptr = chk(cu.cuMemAddressReserve(size, 0, 0, 0))
    chk(cu.cuMemMap(ptr, size, 0, h, 0))
    d = cu.CUmemAccessDesc()
    d.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    d.location.id = 0
    d.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    chk(cu.cuMemSetAccess(ptr, size, [d], 1))
    import struct

    seven = struct.unpack("<I", struct.pack("<f", 7.0))[0]
    chk(cu.cuMemsetD32(ptr, seven, size // 4))
    chk(cu.cuCtxSynchronize())
    os.set_inheritable(fd, True)
    return fd, size, (h, ptr)


def file_transport() -> list[tuple[str, str]]:
    """256 MiB through a /dev/shm file, both directions, pageable vs registered in place."""
    import torch

    from kernelevo.tensor_channel import shared_empty

    rows = []
    folder = tempfile.mkdtemp(prefix="kx-ipc-file-", dir="/dev/shm")
    n = 64 << 20
    src = torch.randn(n, device="cuda")
    torch.cuda.synchronize()
    for registered in (False, True):
        for trial in range(2):
            t0 = time.perf_counter()
            m = shared_empty(folder, f"f{registered:d}{trial}", n, torch.float32)
            made = time.perf_counter()
            if registered:
                cudart = torch.cuda.cudart()
                rc = cudart.cudaHostRegister(m.data_ptr(), n * 4, 0)
                reg = time.perf_counter()
            else:
                rc, reg = 0, made
            m.copy_(src, non_blocking=registered)
            torch.cuda.synchronize()
            d2h = time.perf_counter()
            back = torch.empty_like(src)
            back.copy_(m, non_blocking=registered)
            torch.cuda.synchronize()
            h2d = time.perf_counter()
            ok = bool(torch.equal(back, src))
            if registered:
                torch.cuda.cudart().cudaHostUnregister(m.data_ptr())
            rows.append(
                (
                    f"256 MiB via /dev/shm file, {'registered' if registered else 'pageable'}, try {trial + 1}",
                    f"create {made - t0:.3f} s, register {reg - made:.3f} s (rc {int(rc)}), "
                    f"GPU->file {d2h - reg:.3f} s, file->GPU {h2d - d2h:.3f} s, equal {ok}",
                )
            )
            del m, back
    shutil.rmtree(folder, ignore_errors=True)
    return rows


def main() -> int:
    import cupy
    import torch

    rows: list[tuple[str, str]] = []
    arr = cupy.full((N,), 7.0, dtype=cupy.float32)
    cupy.cuda.runtime.deviceSynchronize()
    cupy_arg = {
        "kind": "cupy",
        "n": N,
        "handle": bytes(cupy.cuda.runtime.ipcGetMemHandle(arr.data.ptr)).hex(),
    }
    t = torch.full((N,), 7.0, device="cuda")
    torch.cuda.synchronize()
    f = t.untyped_storage()._share_cuda_()
    torch_arg = {
        "kind": "torch",
        "n": N,
        "cuda": {
            "device": int(f[0]), "handle": bytes(f[1]).hex(), "size": int(f[2]), "offset": int(f[3]),
            "ref_handle": bytes(f[4]).hex(), "ref_offset": int(f[5]),
            "event_handle": bytes(f[6]).hex() if f[6] is not None else None, "event_sync": bool(f[7]),
        },
    }  # fmt: skip
    raw_torch = {"kind": "cupy", "n": N, "handle": torch_arg["cuda"]["handle"], "offset": int(f[3])}
    uid = 1_000_123
    cases: list[tuple[str, Any]] = [
        ("plain process", lambda a: run_plain(a)),
        ("plain process, forked child", lambda a: run_plain({**a, "fork": True})),
        ("plain process, another uid", lambda a: run_plain({**a, "uid": uid})),
        ("bwrap, no namespace", lambda a: run_plain(a, bwrap())),
        ("bwrap --unshare-ipc", lambda a: run_plain(a, bwrap("--unshare-ipc"))),
        ("bwrap --unshare-pid", lambda a: run_plain(a, bwrap("--unshare-pid"))),
        ("bwrap --unshare-pid --unshare-ipc", lambda a: run_plain(a, bwrap("--unshare-pid", "--unshare-ipc"))),
        ("judge's sandbox (uid 0, no caps)", lambda a: run_spec(None, a)),
        ("candidate runner's sandbox (own uid)", lambda a: run_spec("kernelevo.runner.host", a)),
        ("candidate runner's sandbox, forked child", lambda a: run_spec("kernelevo.runner.host", {**a, "fork": True})),
    ]  # fmt: skip
    torch_too = {
        "plain process",
        "plain process, forked child",
        "candidate runner's sandbox, forked child",
    }
    for name, how in cases:
        handles = [("cupy handle", cupy_arg)]
        if (
            name in torch_too
        ):  # PyTorch's opener (its ref-counter file too), and its raw handle by cupy
            handles += [("torch handle", torch_arg), ("torch handle raw", raw_torch)]
        for label, arg in handles:
            t0 = time.perf_counter()
            seen = how(arg)
            rows.append((f"{name} | {label}", f"opened={seen.get('opened')} read_ok={seen.get('read_ok')} "
                         f"{seen.get('error', '')} ({time.perf_counter() - t0:.1f} s)"))  # fmt: skip
            print(rows[-1], flush=True)
    try:
        exported = vmm_export(4 * N)
    except Exception as exc:  # cuda-python missing a call, or VMM refused
        exported = None
        rows.append(("VMM export", f"failed {type(exc).__name__}: {exc}"[:240]))
    if exported is not None:
        fd, size, _keep = exported
        arg = {"kind": "vmm", "n": N, "fd": fd, "size": size}
        host = "kernelevo.runner.host"
        both = bwrap("--unshare-pid", "--unshare-ipc")
        for name, how in (
            ("plain process, another uid", lambda: run_plain({**arg, "uid": uid}, fds=(fd,))),
            ("bwrap --unshare-pid --unshare-ipc", lambda: run_plain(arg, both, fds=(fd,))),
            ("candidate runner's sandbox (own uid)", lambda: run_spec(host, arg, fds=(fd,))),
            ("candidate runner's sandbox, forked", lambda: run_spec(host, {**arg, "fork": True}, fds=(fd,))),
        ):  # fmt: skip
            seen = how()
            rows.append(
                (
                    f"{name} | VMM fd",
                    f"opened={seen.get('opened')} read_ok={seen.get('read_ok')} {seen.get('error', '')}",
                )
            )
            print(rows[-1], flush=True)
    try:
        rows += file_transport()
    except Exception as exc:
        rows.append(("file transport timing", f"failed {type(exc).__name__}: {exc}"[:240]))
    width = max(len(k) for k, _ in rows)
    print("\n| importer | handle | result |\n|---|---|---|")
    for k, v in rows:
        who, _, what = k.partition(" | ")
        print(f"| {who} | {what} | {v} |")
    del width
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
