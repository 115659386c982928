"""The compile worker: compiles candidates ahead (no GPU), each in a fresh child of its own.

It executes candidate code (imports, forward on meta tensors), so it lives in the runner
package and is built like the runner host: the long-lived process imports torch and Triton
but never a candidate, and forks a fresh child per request; after each child, the processes
and files it left are removed (runner/leftovers.py), so a candidate cannot leave a patch, a
daemon or a planted build for the next one. Each request names the candidate's own cache
folder (runner/candidate_cache.py). Its answers are only ever about compiling (a compile
error is the one conclusive one), never a verdict.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelevo.runner.host import Host


def compile_request(request: dict[str, Any]) -> dict[str, Any]:
    """In the child: the request's op, run on this fresh process."""
    from kernelevo.runner.aot import aot_compile
    from kernelevo.runner.precompile import precompile
    from kernelevo.worker.compile_requests import Aot, Precompile, parse
    from kernelevo.worker.protocol import RequestError

    try:
        req = parse(request)
    except RequestError as exc:
        return {"error": str(exc)}
    if isinstance(req, Precompile):
        return precompile(req).wire()
    if isinstance(req, Aot):
        return aot_compile(req).wire()
    return {"error": f"unknown op {req.op!r}"}


WARM_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x + 1


def get_inputs():
    return [torch.randn(64)]


def get_init_inputs():
    return []
"""

WARM_CANDIDATE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def warm(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + offs, e / tl.sum(e, axis=0), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        warm[(1,)](x, out, x.numel(), BLOCK=64)
        return out
"""


def warm_cuda_compilers() -> None:
    """nvcc's version is part of a cubin's cache key and costs a subprocess the first time a
    process asks, and NVRTC's first compile loads the library (~0.1 s): both done once here,
    the forked children inherit them."""
    from kernelevo.backends import nvrtc
    from kernelevo.backends.nvcc import CudaError, CudaUnavailable, nvcc_version

    with contextlib.suppress(CudaUnavailable, OSError):
        nvcc_version()
    if nvrtc.version() is not None:
        with contextlib.suppress(nvrtc.NvrtcCannot, CudaError):
            nvrtc.compile_cubin('extern "C" __global__ void warm() {}', [], "sm_90", 60)


def _preload() -> None:
    """Imports and one compile of our own tiny kernel, here in the long-lived process: Triton's
    first compile imports hundreds of modules and hashes its own binaries (~10 s): every forked
    child would pay it. torch._dynamo, which a task's get_inputs() on meta tensors would import
    (4-6 s on the H200), is deferred until something compiles with it (worker/lazy_dynamo.py).
    $KERNELEVO_COMPILE_WARMUP names the compilers the verdicts ahead use ("triton", "cuda", "none";
    "all" by default): a one-shot verify of a CUDA kernel does not wait for Triton's warm compile."""
    warm = os.environ.get("KERNELEVO_COMPILE_WARMUP", "all")
    import shutil
    import tempfile

    import torch  # noqa: F401

    from kernelevo.runner import candidate_cache
    from kernelevo.worker import protocol
    from kernelevo.worker.compile_requests import Precompile
    from kernelevo.worker.lazy_dynamo import defer_dynamo_import
    from kernelevo.worker.triton_key import use_stored

    defer_dynamo_import()
    protocol.mark("torch")
    if warm in ("all", "triton") and use_stored():  # Triton's source hash, as the judge stored it
        protocol.mark("triton_key_stored")

    folder = tempfile.mkdtemp(prefix="kernelevo-warm-")
    saved = dict(os.environ)
    try:
        task, cand = os.path.join(folder, "task.py"), os.path.join(folder, "cand.py")
        with open(task, "w") as f:
            f.write(WARM_TASK)
        with open(cand, "w") as f:
            f.write(WARM_CANDIDATE)
        candidate_cache.use(os.path.join(folder, "cache"))
        if warm in ("all", "triton"):
            compile_request(Precompile(task_path=task, candidate_path=cand, arch=90).wire())
            protocol.mark("warm_compile")
        if warm in ("all", "cuda"):
            warm_cuda_compilers()
            protocol.mark("cuda_compilers")
    finally:
        base = os.environ.get(candidate_cache.BASE_ENV)
        os.environ.clear()
        os.environ.update(saved)
        if base:
            os.environ[candidate_cache.BASE_ENV] = base
        shutil.rmtree(folder, ignore_errors=True)


def _answer(host: Host, request: dict[str, Any]) -> dict[str, Any]:
    """One compile request, in a fresh child that `host` forks and removes (with its leftovers)."""
    if request.get("op") == "ping":
        return {"pong": True, "pid": os.getpid()}
    host.open(set())
    relayed = host.relay(
        {k: v for k, v in request.items() if k != "nonce"},
        float(request.get("timeout") or 3600.0),
    )
    closed = host.close()
    reply: dict[str, Any] = relayed.reply or {
        "error": "the compile child "
        + (
            f"ran past {relayed.child_timeout} s"
            if relayed.child_timeout is not None
            else f"ended ({relayed.child_exit or 'no answer'})"
        )
    }
    reply.pop("nonce", None)
    if closed.swept:
        reply["swept"] = closed.swept
    return reply


def main() -> int:
    from kernelevo.runner.engine_pipe import serve_engine

    return serve_engine("compile", _preload, _answer)


if __name__ == "__main__":
    raise SystemExit(main())
