"""Every GPU of this machine: a run worker per GPU (pinned with CUDA_VISIBLE_DEVICES), one
shared pool of compile workers, and candidates sent to whichever GPU is free.

Without a GPU the same dispatcher runs N CPU workers (Triton's interpreter), which is
how the tests exercise it.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from kernelevo.dispatch.pooled import HELD_WINDOW, PooledDispatcher, annotate, lost_worker
from kernelevo.dispatch.slots import DispatchError, Slot, SlotPool
from kernelevo.evaluate import Evaluator
from kernelevo.gpu_gate import GpuGate
from kernelevo.measure.gpus import GpuFacts
from kernelevo.measure.gpus import scan as scan_gpus
from kernelevo.measure.machine import arch_env
from kernelevo.task import TaskFile, read_task
from kernelevo.verdict import Verdict
from kernelevo.verify.compile_ahead import Precompiled, precompile
from kernelevo.worker.pool import Worker, start_all

RETIRE_AFTER = 3  # workers lost in a row before a slot is given up (a broken GPU)
MAX_SLOTS = 8
SLOT_GIB = 8.0  # GPU memory per slot: its processes' contexts, a share of the tasks' inputs


def visible_gpus(wanted: list[int] | None = None) -> list[tuple[int | str, str]]:
    """(CUDA_VISIBLE_DEVICES entry, model) for each GPU to use: `wanted` NVML (= nvidia-smi)
    indexes, else those CUDA_VISIBLE_DEVICES leaves visible, else all."""
    return [(entry, g.name if g else "unknown GPU") for entry, g in _visible(wanted)]


def _visible(wanted: list[int] | None) -> list[tuple[int | str, GpuFacts | None]]:
    """visible_gpus with NVML's facts of each GPU (None for a UUID NVML does not list)."""
    found = scan_gpus().gpus
    by_index = {g.index: g for g in found}
    if wanted is not None:
        missing = [g for g in wanted if g not in by_index]
        if missing:
            have = ", ".join(map(str, sorted(by_index))) or "none"
            raise DispatchError(
                f"--gpus {','.join(map(str, wanted))}: no GPU {missing[0]} here (NVML lists: {have})"
            )
        return [(g, by_index[g]) for g in wanted]
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return sorted(by_index.items())
    out: list[tuple[int | str, GpuFacts | None]] = []
    for entry in (e.strip() for e in env.split(",")):
        if entry.isdigit() and int(entry) in by_index:
            out.append((int(entry), by_index[int(entry)]))
        elif entry.startswith(("GPU-", "MIG-")):
            out.append((entry, next((g for g in found if g.uuid.startswith(entry)), None)))
        else:
            break  # CUDA ignores everything after an invalid entry
    return out


def default_slots(memory_gib: list[float | None], cores: int) -> int:
    """Slots per GPU when none is asked for. More slots keep the GPU busier (an H100 with 8: 51 %
    busy, with 2: 40 %; docs/BENCHMARKS.md, search throughput), though each verdict takes longer;
    each costs a judge, a runner host and a candidate process (two cores' worth of host work
    while checking) and their CUDA contexts, so the smallest GPU's memory (SLOT_GIB a slot)
    and the cores bound it; 2 where NVML cannot tell the memory. 1 to MAX_SLOTS."""
    if not memory_gib:
        return 1
    by_memory = min(int(m // SLOT_GIB) if m else 2 for m in memory_gib)
    return max(1, min(MAX_SLOTS, by_memory, cores // (2 * len(memory_gib))))


def compile_workers(gpus: int) -> int:
    """Compile workers for `gpus` GPUs: a verdict holds its GPU ~0.25 s while a cold Triton compile
    takes ~0.5 s and a CUDA one ~0.1 s (NVRTC) to 0.9 s (nvcc), and every candidate compiles cold
    (a build cache of its own), so each GPU gets up to eight compilers; half the cores at most
    (the rest run the workers and the search), 2 to 32."""
    cores = os.cpu_count() or 2
    return max(2, min(32, 8 * gpus, cores // 2))


class CompilePool:
    """Compile workers shared by all run workers; looks like one Worker to the verifier."""

    def __init__(self, size: int, env: dict[str, str] | None = None) -> None:
        self._workers = [Worker("compile", env=env) for _ in range(max(1, size))]
        self._free: queue.Queue[Worker] = queue.Queue()
        for w in self._workers:
            self._free.put(w)

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        w = self._free.get()
        try:
            return w.request(message, timeout)
        finally:
            self._free.put(w)

    def close(self) -> None:
        for w in self._workers:
            w.close()


class SlotCache:
    """The store's verdict cache as one slot sees it: verdicts from another GPU model are
    not reused, lost-worker verdicts are not kept, and what is kept says where it came from."""

    def __init__(self, store: Any, slot: Slot) -> None:
        self.store, self.slot = store, slot
        self.key: str | None = None

    def get_verdict(
        self, task_hash: str, candidate_hash: str, env_key: str
    ) -> dict[str, Any] | None:
        self.key = env_key
        cached = self.store.get_verdict(task_hash, candidate_hash, env_key)
        return cached if self.slot.accepts(cached) else None

    def put_verdict(
        self, task_hash: str, candidate_hash: str, env_key: str, verdict: dict[str, Any]
    ) -> None:
        self.key = env_key
        if not lost_worker(verdict):
            self.store.put_verdict(task_hash, candidate_hash, env_key, self.slot.stamp(verdict))


class LocalDispatcher(PooledDispatcher):
    """Thread-safe; `capacity` evaluations run at once (one per slot). `slots_per_gpu` k > 1 gives
    each GPU (each CPU worker) k slots, each its own judge and runner host, behind one gate per
    GPU: their check phases overlap, a timing runs alone (kernelevo/gpu_gate.py); None on a GPU
    takes `default_slots` for this machine. `runner_hosts` 2 gives each slot two runner hosts that
    take turns, so no verdict waits for its candidate process's CUDA start (kernelevo/evaluate.py)."""

    def __init__(
        self,
        device: str | None = None,
        *,
        gpus: list[int] | None = None,
        workers: int | None = None,
        store: Any = None,
        timeout: float | None = None,
        retries: int = 2,
        slots_per_gpu: int | None = 1,
        runner_hosts: int = 1,
    ) -> None:
        from kernelevo.verify import default_device

        self.device = device or default_device()
        self.store, self.timeout, self.retries = store, timeout, retries
        self._lock = threading.Lock()
        self.lost = self.requeued = 0
        self.held_s: deque[float] = deque(maxlen=HELD_WINDOW)
        host = socket.gethostname()
        facts = _visible(gpus) if self.device == "cuda" else []
        if self.device == "cuda" and not facts:
            raise DispatchError(
                "no GPU is visible (CUDA_VISIBLE_DEVICES or --gpus); use --device cpu"
            )
        if slots_per_gpu is None and facts:
            memory = [g.memory_gib if g else None for _, g in facts]
            slots_per_gpu = default_slots(memory, os.cpu_count() or 2)
        found = [(entry, g.name if g else "unknown GPU") for entry, g in facts]
        k = self.slots_per_gpu = max(1, slots_per_gpu or 1)

        def per_gpu(label: str, name: str, gpu: int | str | None) -> list[Slot]:
            gate = GpuGate(k) if k > 1 else None
            return [
                Slot(
                    label if k == 1 else f"{label}.{j}",
                    name,
                    Evaluator(
                        self.device,
                        gpu=gpu,
                        compiler=self.compile,
                        gate=gate,
                        runner_hosts=runner_hosts,
                    ),
                    gpu_index=gpu,
                    host=host,
                )
                for j in range(k)
            ]

        if self.device == "cuda":
            self.compile = CompilePool(compile_workers(len(found)), env=arch_env("cuda"))
            groups = [per_gpu(f"gpu{g}", name, g) for g, name in found]
        else:
            n = max(1, workers or 1)
            self.compile = CompilePool(n * k)  # one per slot, as with one slot per worker
            groups = [per_gpu(f"cpu{i}", "cpu", None) for i in range(n)]
        # the first slot of every GPU before any second one: free GPUs are taken before shared ones
        self.pool = SlotPool([s for j in range(k) for s in (g[j] for g in groups)])

    @property
    def compile_width(self) -> int:
        """Candidates compiled at once ahead of a free slot."""
        return len(self.compile._workers)

    def warm_in_background(self) -> None:
        """Start the workers while the search prepares its first candidates (a GPU worker takes ~15 s)."""

        def warm() -> None:
            # closed while starting, or a worker that cannot start: evaluate() reports it
            with contextlib.suppress(Exception):
                self.warm()

        threading.Thread(target=warm, name="kernelevo-warm", daemon=True).start()

    def warm(self) -> None:
        """Start every run worker and compile worker now, side by side, instead of on first use."""
        start_all([w for s in self.pool for w in s.handle.runners] + list(self.compile._workers))

    def evaluate(
        self,
        task: str | Path | TaskFile,
        candidate: str | Path,
        seed: int | None = None,
        *,
        size: str | None = None,
        screen: bool = False,
    ) -> Verdict:
        from kernelevo.verify import verify_candidate

        task_file = task if isinstance(task, TaskFile) else read_task(task)
        t0 = time.monotonic()
        ahead = self._compile_ahead(task_file, Path(candidate), seed, size, screen)
        # where a verdict's wall goes before the verifier starts: compiling ahead (a compile
        # worker's queue included), then the wait for a free slot
        before = {"compile_ahead_s": round(time.monotonic() - t0, 4), "slot_wait_s": 0.0}
        attempts = 0
        while True:
            t1 = time.monotonic()
            slot = self.pool.acquire(task_file.hash, str(candidate))
            before["slot_wait_s"] = round(before["slot_wait_s"] + time.monotonic() - t1, 4)
            attempts += 1
            try:
                cache = SlotCache(self.store, slot) if self.store is not None else None
                verdict = verify_candidate(
                    task_file,
                    candidate,
                    evaluator=slot.handle,
                    store=cache,
                    device=self.device,
                    size=size,
                    timeout=self.timeout,
                    seed=seed,
                    precompiled=ahead if attempts == 1 else None,
                    screen=screen,
                )
                lost = lost_worker(verdict)
                if lost:
                    self._lose(slot)
                else:
                    slot.losses = 0
                    slot.evaluations += 1
                    self._held(verdict)
            finally:
                self.pool.release(slot)
            if lost and attempts <= self.retries:
                with self._lock:
                    self.requeued += 1
                continue
            if not verdict.cached:
                verdict.phases["dispatch"] = before
            return annotate(verdict, slot, attempts)

    def _compile_ahead(
        self,
        task: TaskFile,
        candidate: Path,
        seed: int | None,
        size: str | None,
        screen: bool = False,
    ) -> Precompiled | None:
        """Compile in the shared pool before a GPU is taken, so the GPU only runs (None: let the verifier do it,
        or answer from the verdict cache)."""
        from kernelevo.digest import text_hash
        from kernelevo.verify import lookup_keys, resolve_size
        from kernelevo.verify.static import check_source

        try:
            source = candidate.read_text()
        except OSError:
            return None
        size = resolve_size(task, self.device, size)
        if self.store is not None:
            for key in lookup_keys(self.device, size, screen):
                stored = self.store.get_verdict(task.hash, text_hash(source), key)
                if any(s.accepts(stored) for s in self.pool):
                    return None
        static = check_source(source, candidate.name)
        if not static.ok:
            return None
        return precompile(
            self.compile,
            task.path,
            candidate,
            static.backend,
            device=self.device,
            size=size,
            seed=seed,
            timeout=self.timeout,
        )

    def _lose(self, slot: Slot) -> None:
        with self._lock:
            self.lost += 1
        slot.losses += 1
        if slot.losses >= RETIRE_AFTER and len(self.pool) > 1:
            self.pool.retire(slot)
            slot.handle.close()

    def stats(self) -> dict[str, Any]:
        return self._stats("local")

    def close(self) -> None:
        for s in self.pool:
            s.handle.close()
        self.compile.close()
