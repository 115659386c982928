"""Evaluation workers as Ray actors (one GPU each); the search stays where the user is.

Actors may live on other machines, so the driver ships file contents (the task's source
and the candidate's), never paths; each actor writes them to its own temporary folder and
runs the ordinary verifier with its own worker processes. An actor that dies (its process
or its node lost) is replaced in the background and the candidate it held is queued again:
a lost actor costs time, never a candidate. The verdict cache stays on the driver: the
actor reports the cache key its environment gives, and the driver looks up and stores.

Nodes need KernelEvo, torch and triton installed (the same versions as the driver).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import Any

import ray
from ray import exceptions as rex

from kernelevo.digest import text_hash
from kernelevo.dispatch.pooled import HELD_WINDOW, PooledDispatcher, annotate, lost_worker
from kernelevo.dispatch.slots import DispatchError, Slot, SlotPool
from kernelevo.task import TaskError, TaskFile, read_task
from kernelevo.verdict import Verdict

LOSSES: tuple[type[BaseException], ...] = tuple(
    getattr(rex, n)
    for n in (
        "RayActorError",
        "ActorDiedError",
        "ActorUnavailableError",
        "WorkerCrashedError",
        "NodeDiedError",
        "ObjectLostError",
        "OwnerDiedError",
        "LocalRayletDiedError",
    )
    if hasattr(rex, n)
)
MAX_ACTOR_LOSSES = 5  # per candidate, before it is given a runtime_error verdict


class _KeyRecorder:
    """A store that remembers the cache key the verifier computed and holds nothing."""

    key: str | None = None

    def get_verdict(self, task_hash: str, candidate_hash: str, env_key: str) -> None:
        self.key = env_key
        return None

    def put_verdict(
        self, task_hash: str, candidate_hash: str, env_key: str, verdict: dict[str, Any]
    ) -> None:
        self.key = env_key


class EvalActor:
    """Runs on a Ray worker: holds one Evaluator (a run and a compile worker process)."""

    def __init__(self, device: str) -> None:
        from kernelevo.evaluate import Evaluator

        self.device = device
        self.evaluator = Evaluator(device)  # Ray has set CUDA_VISIBLE_DEVICES to this actor's GPU
        self.dir = Path(tempfile.mkdtemp(prefix="kernelevo-actor-"))

    def info(self) -> dict[str, Any]:
        from kernelevo.measure.machine import probe

        index: int | str | None = None
        name = "cpu"
        if self.device == "cuda":
            ids = ray.get_gpu_ids()
            gpus = probe().gpus
            index = ids[0] if ids else None
            try:
                index = int(index)  # type: ignore[arg-type]
                name = gpus[index] if index < len(gpus) else (gpus[0] if gpus else "unknown GPU")
            except (TypeError, ValueError):
                name = gpus[0] if gpus else "unknown GPU"
        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "gpu_index": index,
            "gpu_name": name,
            "node_id": ray.get_runtime_context().get_node_id(),
        }

    def warm(self) -> bool:
        for runner in self.evaluator.runners:
            if not runner.alive:
                runner.start()
        return True

    def evaluate(
        self,
        task_name: str,
        task_source: str,
        cand_name: str,
        cand_source: str,
        seed: int | None,
        size: str | None,
        timeout: float | None,
        screen: bool = False,
    ) -> dict[str, Any]:
        from kernelevo.verify import verify_candidate

        task_dir = self.dir / text_hash(task_source)[:16]
        task_path = task_dir / f"{task_name}.py"
        if not task_path.exists():
            task_dir.mkdir(parents=True, exist_ok=True)
            task_path.write_text(task_source)
        cand_path = self.dir / f"{text_hash(cand_source)[:12]}_{cand_name}"
        cand_path.write_text(cand_source)
        recorder = _KeyRecorder()
        try:
            verdict = verify_candidate(
                read_task(task_path),
                cand_path,
                evaluator=self.evaluator,
                store=recorder,
                device=self.device,
                size=size,
                seed=seed,
                timeout=timeout,
                screen=screen,
            )
        except TaskError as exc:
            return {"task_error": str(exc)}
        finally:
            cand_path.unlink(missing_ok=True)
        return {"verdict": verdict.to_dict(), "key": recorder.key}

    def close(self) -> bool:
        self.evaluator.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return True


_RemoteActor = ray.remote(EvalActor)


def connect(cluster: str, workers: int | None = None) -> bool:
    """ray.init for `cluster` ("local": a new Ray instance in this process; "auto"; "ray://HOST:PORT";
    a GCS "HOST:PORT"). Returns whether this call started Ray (and so should shut it down)."""
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    if cluster == "local":
        kwargs.update(include_dashboard=False, num_cpus=workers if workers else None)
        ray.init(address="local", **kwargs)
    else:
        try:
            ray.init(address=cluster, **kwargs)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
            raise DispatchError(
                f"--cluster {cluster}: cannot connect to a Ray cluster: {exc}"
            ) from exc
    return True


class RayDispatcher(PooledDispatcher):
    """Thread-safe; `capacity` actors evaluate at once."""

    def __init__(
        self,
        cluster: str = "auto",
        *,
        device: str | None = None,
        workers: int | None = None,
        store: Any = None,
        timeout: float | None = None,
        retries: int = 2,
        start_timeout: float = 300.0,
    ) -> None:
        self._owns_ray = connect(cluster, workers)
        self.store, self.timeout, self.retries, self.start_timeout = (
            store,
            timeout,
            retries,
            start_timeout,
        )
        res = ray.cluster_resources()
        n_gpus = int(res.get("GPU", 0))
        self.device = device or ("cuda" if n_gpus else "cpu")
        if self.device == "cuda" and not n_gpus:
            self.close()
            raise DispatchError(f"--device cuda: the Ray cluster at {cluster} has no GPU")
        n = workers or (n_gpus if self.device == "cuda" else max(1, int(res.get("CPU", 1))))
        self._options = {"num_gpus": 1} if self.device == "cuda" else {"num_cpus": 1}
        self._lock = threading.Lock()
        self._keys: dict[tuple[str, str, bool], str] = {}
        self.lost = self.lost_actors = self.requeued = 0
        self.held_s: deque[float] = deque(maxlen=HELD_WINDOW)
        self.pool = SlotPool()
        actors = [self._new_actor() for _ in range(n)]
        for actor, ref in [(a, a.info.remote()) for a in actors]:
            try:
                self.pool.add(self._slot(actor, ray.get(ref, timeout=start_timeout)))
            except (rex.GetTimeoutError, *LOSSES):
                ray.kill(actor, no_restart=True)
        if not len(self.pool):
            self.close()
            raise DispatchError(
                f"no Ray worker started within {start_timeout:.0f} s "
                f"(each needs {'a GPU' if self.device == 'cuda' else 'a CPU'})"
            )

    def _new_actor(self) -> Any:
        return _RemoteActor.options(max_restarts=0, **self._options).remote(self.device)

    def _slot(self, actor: Any, info: dict[str, Any]) -> Slot:
        where = f"gpu{info['gpu_index']}" if info["gpu_index"] is not None else f"pid{info['pid']}"
        return Slot(
            f"{info['host']}/{where}",
            info["gpu_name"],
            actor,
            gpu_index=info["gpu_index"],
            host=info["host"],
            info=info,
        )

    def warm(self) -> None:
        ray.get([s.handle.warm.remote() for s in self.pool])

    # -- evaluation --------------------------------------------------------------------
    def evaluate(
        self,
        task: str | Path | TaskFile,
        candidate: str | Path,
        seed: int | None = None,
        *,
        size: str | None = None,
        screen: bool = False,
    ) -> Verdict:
        task_file = task if isinstance(task, TaskFile) else read_task(task)
        cand = Path(candidate)
        if not cand.is_file():
            raise TaskError(f"{cand}: no such candidate file")
        source = cand.read_text()
        attempts = actor_losses = 0
        while True:
            slot = self.pool.acquire(task_file.hash, str(cand))
            attempts += 1
            try:
                hit = self._cached(task_file, source, slot, screen) if attempts == 1 else None
                if hit is not None:
                    return annotate(hit, slot, attempts)
                ref = slot.handle.evaluate.remote(
                    task_file.name,
                    task_file.source,
                    cand.name,
                    source,
                    seed,
                    size,
                    self.timeout,
                    screen,
                )
                try:
                    reply = ray.get(ref)
                except LOSSES as exc:
                    actor_losses += 1
                    self._replace(slot)
                    if actor_losses > MAX_ACTOR_LOSSES:
                        return annotate(
                            Verdict(
                                "runtime_error",
                                f"{actor_losses} Ray workers were lost while "
                                f"evaluating this candidate; last: {type(exc).__name__}",
                                worker_lost=True,
                            ),
                            slot,
                            attempts,
                        )
                    with self._lock:
                        self.requeued += 1
                    continue
            finally:
                self.pool.release(slot)
            if "task_error" in reply:
                raise TaskError(reply["task_error"])
            verdict = Verdict.from_dict(reply["verdict"])
            if reply.get("key"):
                self._keys[(slot.gpu_name, task_file.hash, screen)] = reply["key"]
            if lost_worker(verdict):
                with self._lock:
                    self.lost += 1
                if attempts <= self.retries:
                    with self._lock:
                        self.requeued += 1
                    continue
            else:
                slot.evaluations += 1
                self._held(verdict)
                self._store(task_file, verdict, reply.get("key"), slot)
            return annotate(verdict, slot, attempts)

    def _cached(
        self, task_file: TaskFile, source: str, slot: Slot, screen: bool = False
    ) -> Verdict | None:
        """A stored verdict for this content; a screening request takes a full verdict too."""
        if self.store is None:
            return None
        data = None
        for kind in dict.fromkeys((False, screen)):
            key = self._keys.get((slot.gpu_name, task_file.hash, kind))
            if key is not None and data is None:
                data = self.store.get_verdict(task_file.hash, text_hash(source), key)
        if data is None or not slot.accepts(data):
            return None
        verdict = Verdict.from_dict(data)
        verdict.cached = True
        return verdict

    def _store(self, task_file: TaskFile, verdict: Verdict, key: str | None, slot: Slot) -> None:
        if self.store is None or key is None or verdict.status == "timeout":
            return
        self.store.put_verdict(
            task_file.hash, verdict.candidate_hash, key, slot.stamp(verdict.to_dict())
        )

    # -- losing and replacing actors ---------------------------------------------------------
    def _replace(self, slot: Slot) -> None:
        with self._lock:
            self.lost_actors += 1
        self.pool.expect(1)
        self.pool.retire(slot)
        with contextlib.suppress(Exception):
            ray.kill(slot.handle, no_restart=True)
        threading.Thread(
            target=self._start_replacement, name="kernelevo-ray-replace", daemon=True
        ).start()

    def _start_replacement(self) -> None:
        actor = self._new_actor()
        try:
            self.pool.add(
                self._slot(actor, ray.get(actor.info.remote(), timeout=self.start_timeout))
            )
        except Exception:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        finally:
            self.pool.expected_done(1)

    # -- the rest --------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        return {**self._stats("ray"), "lost_actors": self.lost_actors}

    def close(self) -> None:
        slots = list(self.pool) if hasattr(self, "pool") else []
        refs = [s.handle.close.remote() for s in slots]
        with contextlib.suppress(Exception):
            ray.get(refs, timeout=30)
        for s in slots:
            with contextlib.suppress(Exception):
                ray.kill(s.handle, no_restart=True)
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
            self._owns_ray = False
