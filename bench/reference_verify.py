"""One task's reference through the judge's verification and timing path (bench/judge_memory.py).

The judge's handlers (kernelevo.judge.process.Judge) run in this process; the candidate's side
is the reference itself, given its inputs and handing back its outputs as the candidate
process would (ReferenceAsCandidate), so the memory held is what a verification holds.
"""

from __future__ import annotations

import contextlib
import gc
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernelevo.judge import requests as rq

GiB = float(1 << 30)


def _ok(reply: dict[str, Any], what: str) -> dict[str, Any]:
    for key in ("task_error", "channel_error", "error"):
        if key in reply:
            raise RuntimeError(f"{what}: {key}: {reply[key]}")
    for c in reply.get("checks") or []:
        if not c["passed"]:
            raise RuntimeError(f"{what}: check {c['name']} failed: {c['message']}")
    return reply


class ReferenceAsCandidate:
    """The candidate process's side of one verification, in this process: ModelNew = the task's Model
    with the judge's randomised weights, on the inputs as the candidate gets them (the judge's CUDA
    copies by IPC; through files, its own GPU copies of the files) and its outputs handed back the
    same way (copied into the judge's buffers; written to files)."""

    def __init__(self, judge: Any, device: str, folder: str, via: str) -> None:
        import torch

        self.judge, self.device, self.folder, self.via = judge, device, folder, via
        self.ipc = device == "cuda" and via == "ipc"
        self.shm_peak = 0
        ref = judge.ref
        torch.manual_seed(0)
        self.model = ref.module.Model(*ref.init).to(device).eval()
        self.model.load_state_dict(ref.model.state_dict())

    def args(self, descs: list[Any], shared: list[Any]) -> list[Any]:
        from kernelevo.tensor_channel import open_values

        self.sample()
        return list(shared) if self.ipc else open_values(descs, self.folder, 1 << 62)

    def sample(self) -> None:
        """Bytes in the exchange folder now (host memory under /dev/shm)."""
        self.shm_peak = max(self.shm_peak, sum(e.stat().st_size for e in os.scandir(self.folder)))

    def run(self, args: list[Any]) -> Any:
        import torch

        with torch.no_grad():
            out = self.model(*args)
        if self.device == "cuda":
            torch.cuda.synchronize()
        return out

    def deliver(self, out: Any, tag: str) -> list[dict[str, Any]]:
        import torch

        from kernelevo.checks.compare import flatten_outputs
        from kernelevo.tensor_channel import export_tensor

        outs = flatten_outputs(out)
        tens = [o for o in outs if isinstance(o, torch.Tensor)]
        specs = [
            {"dtype": str(o.dtype).replace("torch.", ""), "shape": list(o.shape)} for o in tens
        ]
        if self.ipc:
            _ok(self.judge.handle(rq.OutBuffers(specs).wire()), "out_buffers")
            for buf, o in zip(self.judge.outbufs, tens, strict=True):
                buf.copy_(o)
        items: list[dict[str, Any]] = []
        pending = iter(specs)
        for i, o in enumerate(outs):
            if isinstance(o, torch.Tensor) and self.ipc:
                items.append({"pending": next(pending), "plain": True})
            elif isinstance(o, torch.Tensor):
                desc = export_tensor(o, self.folder, f"out-{tag}-{i}", self.via)
                items.append({"tensor": desc, "plain": True})
            else:
                items.append({"value": o})
        self.sample()
        return items


@contextlib.contextmanager
def no_cuda_ipc_handles() -> Iterator[None]:
    """CUDA tensors the judge would share by IPC handle are described without one: in this process
    nobody opens a handle, and an exported block that no consumer releases is never freed (PyTorch
    keeps it for the consumer), so every task's inputs would stay on the GPU."""
    import torch

    import kernelevo.judge.process as judge_process

    real_tensor, real_values = judge_process.export_tensor, judge_process.export_values

    def tensor(t: Any, folder: str, name: str, via: str = "ipc") -> Any:
        if isinstance(t, torch.Tensor) and t.device.type == "cuda" and via == "ipc":
            return {"in_process": True, "shape": list(t.shape)}
        return real_tensor(t, folder, name, via)

    def values(vals: list[Any], folder: str, prefix: str, via: str = "ipc") -> list[Any]:
        if via == "ipc" and any(isinstance(v, torch.Tensor) and v.is_cuda for v in vals):
            return [{"in_process": True} for _ in vals]
        return real_values(vals, folder, prefix, via)

    judge_process.export_tensor, judge_process.export_values = tensor, values
    try:
        yield
    finally:
        judge_process.export_tensor, judge_process.export_values = real_tensor, real_values


def verify_reference(
    path: Path,
    device: str,
    seed: int,
    max_time_s: float,
    compile_mode: str | None,
    size: str,
    via: str = "ipc",
) -> dict[str, Any]:
    """One task through verification and timing; returns what it measured (raises on a failure)."""
    import torch

    from kernelevo.judge.process import Judge
    from kernelevo.judge.reference import nbytes
    from kernelevo.measure import timing
    from kernelevo.task import read_task

    task = read_task(path)
    folder = tempfile.mkdtemp(
        prefix="kernelevo-memplan-", dir="/dev/shm" if device == "cpu" or via == "file" else None
    )
    j = Judge()
    common = {"task_path": str(path), "task_hash": task.hash, "size": size, "device": device}
    row: dict[str, Any] = {}
    t0 = time.perf_counter()
    try:
        row["need_gib"] = _ok(j.handle(rq.Probe(**common, seed=seed).wire()), "probe")["need_gib"]
        row["probe_s"] = round(time.perf_counter() - t0, 2)
        begin = _ok(
            j.handle(rq.Begin(**common, seed=seed, exchange=folder, via=via).wire()),
            "begin",
        )
        cand = ReferenceAsCandidate(j, device, folder, via)

        def one_set(set_name: str, s: int, cand_first: bool, rerun: int | None, extra=None) -> None:
            inp = _ok(j.handle(rq.Inputs(set_name, s, extra).wire()), "inputs")
            args = cand.args(inp["args"], j.sets[set_name]["shared"])
            for again in [False, True] if rerun is not None else [False]:
                if again:
                    _ok(j.handle(rq.Refill(set_name, rerun).wire()), "refill")
                if cand_first and not again:
                    out = cand.run(args)
                    _ok(j.handle(rq.Reference(set_name).wire()), "reference")
                else:
                    _ok(j.handle(rq.Reference(set_name).wire()), "reference")
                    out = cand.run(args)
                items = cand.deliver(out, set_name)
                del out
                req = rq.Compare(set_name, outputs=items, label=set_name)
                _ok(j.handle(req.wire()), f"compare {set_name}")
            del args
            _ok(j.handle(rq.Drop(set_name).wire()), "drop")

        seeds = [seed + 7919 * i for i in range(5)]
        for i, s in enumerate(seeds):
            one_set(f"s{i}", s, i % 2 == 0, s + 1 if i == 0 else None)
        for x in range(int(begin.get("n_extra") or 0)):
            one_set(f"x{x}", seeds[0] + x, True, None, extra=x)
        row["sets"] = 5 + int(begin.get("n_extra") or 0)
        row["checks_s"] = round(time.perf_counter() - t0, 2)
        descs = _ok(j.handle(rq.TimingSets(seed=seed).wire()), "timing_sets")["sets"]
        sets = [cand.args(d, shared) for d, shared in zip(descs, j.timing_shared, strict=True)]
        own = timing.time_interleaved(
            {"candidate": lambda i: cand.model(*sets[i])},
            n_input_sets=len(sets),
            input_set_bytes=nbytes(sets[0]),
            device=torch.device(device),
            max_time_s=max_time_s,
        )["candidate"]
        key = f"{task.hash}|memplan|{compile_mode}"
        base = _ok(j.handle(rq.Baselines(key, compile_mode, max_time_s).wire()), "baselines")
        _ok(j.handle(rq.Bound(key, own.median_ms).wire()), "bound")
        items = cand.deliver(cand.run(sets[0]), "timed")
        _ok(j.handle(rq.CheckTimedOutput(items, label="timed").wire()), "timed")
        row.update(
            timing_sets=len(sets),
            candidate_ms=round(own.median_ms, 4),
            eager_ms=round(base["eager"]["median_ms"], 4),
            compile_ms=round(base["compile"]["median_ms"], 4) if base.get("compile") else None,
            compile_error=base.get("compile_error"),
            input_gib=round(nbytes(sets[0]) / GiB, 3),
            shm_peak_gib=round(cand.shm_peak / GiB, 2),
        )
        sets = items = []
    finally:
        j.handle(rq.End().wire())
        j.baselines.clear()
        j.refs.clear()
        j.timing_shared = []
        cand = None
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
            torch._dynamo.reset()
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    row["seconds"] = round(time.perf_counter() - t0, 2)
    return row


def eager_peak(path: Path, device: str, size: str) -> float | None:
    """GiB held by get_inputs() and one forward alone (on a GPU): what running the task needs anyway."""
    import torch

    from kernelevo.task import load_task_module

    if device != "cuda":
        return None
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    mod = load_task_module(str(path), size)
    with torch.device(device):
        init = list(mod.get_init_inputs())
        torch.manual_seed(0)
        inputs = list(mod.get_inputs())
        model = mod.Model(*init).eval()
        with torch.no_grad():
            out = model(*inputs)
    torch.cuda.synchronize()
    del out, inputs, model
    peak = torch.cuda.max_memory_allocated() - base
    gc.collect()
    torch.cuda.empty_cache()
    return round(peak / GiB, 2)
