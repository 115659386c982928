"""One verification, driven from the engine: the judge process decides, a fresh candidate process computes.

The sequence keeps the dynamic checks' intent with every decision taken from data:
several input sets drawn by the judge from fresh seeds (the candidate never learns a
seed), the candidate running before the reference on alternate sets, poisoned
allocations in the candidate process, inputs fingerprinted by the judge before and
after, new values written by the judge into the same buffers, extra shapes. Input sets
are handled one at a time and dropped on both sides before the next (the memory plan).
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevo.checks.library_ops import libraries_called
from kernelevo.judge import baseline_store
from kernelevo.judge import replies as rp
from kernelevo.judge import requests as rq
from kernelevo.judge.clients import CandidateClient, CandidateFailed, JudgeClient, JudgeFailed
from kernelevo.judge.exchange import exchange_folder, remove_exchange
from kernelevo.judge.input_sets import check_input_sets, step_aside
from kernelevo.judge.session_policy import decide_policy
from kernelevo.task import TaskError, TaskFile
from kernelevo.verdict import Check, Verdict
from kernelevo.worker import candidate_replies as cp
from kernelevo.worker import candidate_requests as cr
from kernelevo.worker.cache_folders import built_artefacts

if TYPE_CHECKING:
    from kernelevo.gpu_gate import GateHold

RAN_FIRST = "the candidate ran before the reference on alternate sets, in its own process"
TIMED_DEVICES = ("cuda",)  # a CPU time says nothing of a GPU kernel (the tests time on CPU too)


class Session:
    # set by the policy step (judge/session_policy.py), read once the outputs matched
    library_ops: list[str]
    kept: list[str]
    precision: Check | None
    split: str

    def __init__(
        self,
        task: TaskFile,
        cand_path: Path,
        backend: str,
        ev: Any,
        device: str,
        size: str,
        timeout: float,
        seed: int | None,
        compile_mode: str | None = "default",
        max_time_s: float = 10.0,
        policy: dict[str, Any] | None = None,
        cache: str | None = None,
        launchers: list[dict[str, Any]] | None = None,
    ) -> None:
        """`policy`: the user's choices (strict, accepted precision levels, compile mode, timing budget);
        `cache`: the candidate's own build caches from its compile ahead (worker/cache_folders.py);
        `launchers`: the argument signatures of its Triton kernels, as its compile ahead saw them."""
        self.held_cache, self.launchers = cache, list(launchers or [])
        self.cache: str | None = None
        self.policy_args = dict(policy or {})
        self.compile_mode = self.policy_args.get("compile_mode", compile_mode)
        self.max_time_s = float(self.policy_args.get("max_time_s", max_time_s))
        # a parameter-search configuration: one input set (refilled once), no extra shapes
        self.screen = bool(self.policy_args.get("screen"))
        self.custom_calls = 0
        self.needs_profile: bool | None = None  # known at the policy step; tells the next spare
        self.untraced: list[str] = []
        self.task, self.backend, self.device, self.size = task, backend, device, size
        self.cand_path = Path(cand_path)
        self.judge = JudgeClient(ev.judge, timeout)
        self.cand = CandidateClient(ev.runner, timeout)
        self.ev = ev
        self.via = getattr(ev, "transport", "ipc")
        self.base = int(seed or random.SystemRandom().randrange(1, 2**31))
        self.checks: list[Check] = []
        self.timing_note = ""  # the timing step's (judge/timing_check.py), as device_info
        self.device_info: dict[str, Any] = {}
        self.inputs: list[list[dict[str, Any]]] = []
        self.launches = 0
        self.phases: dict[str, Any] = {}
        self.need_gib: float | None = None
        self.known: dict[str, Any] = {}  # the task's need and extra shapes, as its probe measured
        self.hold: GateHold | None = None

    def enter_gate(self) -> GateHold | None:
        """This verdict's hold on its GPU's gate, shared by the slots of one GPU
        (kernelevo/gpu_gate.py); None with one slot per GPU. The task's memory need, where its
        probe was kept, is told to the gate first."""
        gate = getattr(self.ev, "gate", None)
        if gate is None:
            return None
        key = f"{self.task.hash}|{self.size}"
        probe_key = baseline_store.probe_key(self)
        kept = baseline_store.load(probe_key, "probe") if probe_key else None
        if kept:
            gate.learn(key, kept.get("need_gib"), kept.get("device_gib"))
        self.hold = gate.hold(key)
        return self.hold

    def leave_gate(self) -> None:
        if self.hold is not None:
            self.hold.release()
            self.phases["gpu_gate"] = self.hold.record()

    def common(self) -> dict[str, Any]:
        return {
            "task_path": str(self.task.path),
            "task_hash": self.task.hash,
            "size": self.size,
            "device": self.device,
        }

    def fail_on(self, replies: list[rp.Compared]) -> None:
        for check in (c for r in replies for c in r.checks):
            self.checks.append(check)
            if not check.passed:
                raise CandidateFailed("incorrect", check.message)

    def _facts(self, out: cp.Outputs, label: str) -> None:
        """What the candidate process counted about one run (launches, kernels whose results reach
        the outputs): claims that can only count against it."""
        self.launches += out.launches
        self.custom_calls += out.custom_calls
        self.untraced += [f"output {i} ({label})" for i in out.untraced]

    def delivered(self, out: cp.Outputs, when: str) -> cp.Outputs:
        """CUDA outputs reach the judge by copy into buffers it exports (CUDA IPC crosses into a
        sandbox, not out of one); other outputs are already described."""
        pending = [o["pending"] for o in out.outputs if "pending" in o]
        if pending:
            buffers = self.judge.ask(rq.OutBuffers(specs=pending)).buffers
            self.cand.ask(cr.CopyOut(buffers=buffers), f"handing over the outputs of {when}")
        return out

    def _drop_outputs(self, outputs: list[Any]) -> None:
        for item in outputs:
            name = item.get("tensor", {}).get("file") if isinstance(item, dict) else None
            if isinstance(name, str) and "/" not in name and name.startswith("out-"):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(self.folder, name))

    def probe(self) -> None:
        """The reference alone on the input sets, before any candidate: its faults are the task's
        (TaskError). Passed once for this content, size and machine, it is kept on disk."""
        key = baseline_store.probe_key(self)
        kept = baseline_store.load(key, "probe") if key is not None else None
        if kept:
            self.known = {k: kept.get(k) for k in ("need", "n_extra")}
            return
        try:
            reply = self.judge.ask(rq.Probe(**self.common(), seed=self.base))
            self.known = {"need": reply.need, "n_extra": reply.n_extra}
            if key is not None:  # the GPU gate's plan, and what the judge's next Begin is told
                plan = {"need_gib": reply.need_gib, "device_gib": reply.device_gib, **self.known}
                baseline_store.save(key, {"probed": True, **plan}, "probe")
        except JudgeFailed as exc:
            self.judge.worker.kill()
            why = (
                f"a hang, or a reference too slow at these sizes on the {self.device}: give the "
                "task smaller sizes for the CPU (a SMALL dict, docs/FORMATS.md) or verify on a GPU"
                if exc.timed_out and self.device == "cpu"
                else "a hang, a crash or an exit in Model, get_inputs() or get_init_inputs(); fix the task"
            )
            raise TaskError(
                f"{self.task.path}: the task's reference, run alone before any candidate, did not "
                f"finish: {exc} ({why})"
            ) from exc

    def begin(self, seed: int, same_seed_only: bool = False) -> tuple[rp.Begun, cp.Loaded]:
        """Weights and init values to the candidate process: by CUDA IPC where it crosses between the
        two sandboxes, else (found once per evaluator) through files. ModelNew gets the reference's
        randomised weights matched by meaning (checks/weights.py); where none match, or with
        `same_seed_only`, both keep their weights from the same seed (KernelBench's rule). Both
        modules are built where the judge could build Model (the GPU, else the CPU); a ModelNew that
        cannot be built on the GPU has both built on the CPU again."""
        build_on: str | None = None
        for _attempt in range(3):
            begin = self.judge.ask(
                rq.Begin(
                    **self.common(),
                    seed=seed,
                    exchange=self.folder,
                    via=self.via,
                    build_on=build_on,
                    need=self.known.get("need"),
                    n_extra=self.known.get("n_extra"),
                )
            )
            self.need_gib = begin.need_gib
            if self.hold is not None:  # a small task's check phase may now overlap others
                self.hold.learned(self.need_gib, begin.device_gib)
            loaded = self.cand.ask(
                cr.Load(
                    candidate_path=str(self.cand_path.resolve()),
                    exchange=self.folder,
                    device=self.device,
                    init=begin.init,
                    weights=begin.weights,
                    initial=begin.initial,
                    probe=begin.probe,
                    cache=self.cache,
                    seed=seed,
                    via=self.via,
                    same_seed_only=same_seed_only,
                    build_on=begin.built_on,
                ),
                "importing and constructing the candidate",
            )
            if loaded.built_on != begin.built_on:
                build_on = "cpu"
                self.cand.close()
                self.cand.open()
                continue
            if loaded.ipc_failed is None or self.via == "file":
                break
            self.via = self.ev.transport = "file"
            self.phases["cuda_ipc"] = (
                f"unavailable between the sandboxes ({loaded.ipc_failed[:200]})"
            )
            self.cand.close()
            self.cand.open()
        if loaded.ipc_failed is not None:
            raise JudgeFailed(f"tensors cannot reach the candidate process: {loaded.ipc_failed}")
        if not loaded.plan:
            self.judge.ask(rq.SameSeed())  # the reference keeps its weights from the seed too
        self.transformed = loaded.transformed
        self.checks.append(Check("weights", True, loaded.weights_rule))
        self.phases["transport"] = self.via if self.device == "cuda" else "shared memory"
        self.phases["weights_built_on"] = begin.built_on
        return begin, loaded

    def install_cache(self) -> None:
        """The candidate's own build caches into the runner host's reach, for this verdict only."""
        install = getattr(self.ev.runner, "install_cache", None)
        if install is None or getattr(self.ev.runner, "cache_root", None) is None:
            return
        self.cache = install(self.held_cache)
        self._cached_before = built_artefacts(self.cache)

    def build_launchers(self) -> None:
        """Triton's C launchers for the candidate's signatures, built by the judge into the shared
        cache (judge/launchers.py), so neither its compile ahead nor its first launch builds one."""
        if self.launchers and self.device == "cuda":
            done = self.judge.ask(rq.Launchers(specs=self.launchers))
            self.phases["launchers"] = {"built": done.built, "found": done.found}
            if done.refused:
                self.phases["launchers"]["refused"] = done.refused[:3]

    def drop_cache(self) -> None:
        """What the candidate process had to build itself (nothing, when compiling ahead found it
        all), then the runner's copy goes: no later candidate ever reads it (the held folder,
        named by this candidate's content, stays for its next compile)."""
        from kernelevo.worker.cache_folders import discard

        if self.cache:
            new = sorted(built_artefacts(self.cache) - self._cached_before)
            self.phases["built_in_run"] = new[:20]
            discard(self.cache)

    def run(self, measure: bool) -> tuple[Verdict, dict[str, Any]]:
        t0 = time.perf_counter()
        for host in getattr(self.ev, "runners", ()):  # with hosts taking turns, the last one's too
            if host is not self.cand.host:
                CandidateClient(host, self.cand.timeout).settled()
        self.cand.settled()  # nothing the last candidate left runs on while this one's folders are made
        if getattr(self.ev, "exchange", None):  # one verification at a time per evaluator
            from kernelevo.worker.cache_folders import clear  # what an earlier one left goes

            clear(Path(self.ev.exchange))
        self.folder = exchange_folder(self.ev)
        status, reason, log, lost = "verified", "", "", False
        report = cp.Reported()
        try:
            self.cand.open()  # waits for the spare's start here, before the GPU's gate is taken
            self.phases["spare_wait_s"] = self.cand.ready_s
            self.phases["spare_taken"] = self.cand.from_spare
            self.enter_gate()
            self.probe()
            self.phases["probe_s"] = round(time.perf_counter() - t0, 4)
            n_sets = 1 if self.screen else max(5, int(self.task.hints.get("VERIFY_SEEDS", 5) or 5))
            seeds = [self.base + 7919 * i for i in range(n_sets)]
            self.install_cache()
            self.build_launchers()
            begin, loaded = self.begin(seeds[0])
            self.phases["load_s"] = loaded.load_s
            try:
                check_input_sets(self, seeds, begin, extra_shapes=not self.screen)
            except CandidateFailed as exc:
                # Weights folded at construction (a constant divided in once) cannot take the reference's
                # randomised weights: judged as KernelBench does, from one seed, where that seed decides
                # the reference's weights (a fixed init, e.g. ones, would let ignored weights pass).
                if exc.status != "incorrect" or not self.transformed:
                    raise
                if not self.judge.ask(rq.SeedVaries(seed=seeds[0])).varies:
                    raise
                self.checks, self.inputs, self.untraced = [], [], []
                self.launches = self.custom_calls = 0
                self.cand.close()
                self.cand.open()
                begin, loaded = self.begin(seeds[0], same_seed_only=True)
                check_input_sets(self, seeds, begin, extra_shapes=not self.screen)
            self.checks.append(Check("candidate_ran_first", True, RAN_FIRST))
            report = self.cand.ask(cr.Report(), "reporting")
            self.phases["candidate_dynamo"] = report.dynamo
            decide_policy(self, report)
            self.phases["checks_s"] = round(time.perf_counter() - t0, 4)
            if measure and self.device in TIMED_DEVICES:
                from kernelevo.judge.timing_check import timed

                p = self.precision.detail if self.precision is not None else {}  # TF32 baselines?
                self.tf32 = p.get("level") == "tf32" and not p.get("reference_tf32")
                self.timings, self.roofline = timed(self)  # the GPU alone for the timing itself
            step_aside(self)  # a waiting timing goes before this verdict's clean-up
        except CandidateFailed as exc:
            status, reason, log, lost = exc.status, exc.reason, exc.log, exc.lost
            if reason.startswith("out of memory") and self.need_gib is not None:
                reason += f" (the task itself needs ~{max(self.need_gib, 0.01):.2f} GiB)"
        except JudgeFailed as exc:
            status, reason, lost = "runtime_error", f"{exc}", exc.lost
        finally:
            t_clean = time.perf_counter()
            ops = getattr(self, "library_ops", None)  # known once the policy step ran
            warm = self.phases["spare_warms"] = None if ops is None else libraries_called(ops)
            self.cand.close(self.needs_profile, warm)
            with contextlib.suppress(JudgeFailed, Exception):
                self.judge.ask(rq.End(), timeout=60)
            remove_exchange(self.folder)
            self.drop_cache()
            self.leave_gate()
            self.phases["cleanup_s"] = round(time.perf_counter() - t_clean, 4)
        if status == "verified":
            n = sum(1 for c in self.checks if c.name.startswith("match["))
            precision = getattr(self, "precision", None)
            reason = (
                f"outputs match the reference on {n} input set{'s' if n != 1 else ''}"
                + (f" at {precision.message}" if precision is not None else "")
                + (f"; {self.split}" if getattr(self, "split", "") else "")
                + self.timing_note
            )
            if self.screen:
                status = "screened"
                reason = (
                    f"screened, not verified: {reason}; a parameter-search configuration is "
                    "checked on one input set and timed, and the one kept is verified in full"
                )
        self.phases.setdefault("checks_s", round(time.perf_counter() - t0, 4))
        self.phases["total_s"] = round(time.perf_counter() - t0, 4)
        verdict = Verdict(
            status=status,
            reason=reason,
            backend=self.backend,
            checks=self.checks,
            kernel_launches=self.launches,
            library_ops=getattr(self, "library_ops", []),
            kept_library_ops=getattr(self, "kept", []),
            library_split=getattr(self, "split", ""),
            log=log,
            worker_lost=lost,
            inputs=self.inputs if status == "verified" else [],
            phases=self.phases,
            timings=getattr(self, "timings", {}),
            roofline=getattr(self, "roofline", {}),
            device={
                "type": self.device,
                "triton_interpreter": self.device == "cpu",
                "judge": "separate process",
                "candidate_process": "fresh per candidate",
                **self.device_info,
            },
        )
        return verdict, dict(report.signatures)


def probe_task(
    task: TaskFile, ev: Any, device: str, size: str, timeout: float, seed: int | None = None
) -> None:
    """The task's own checks (memory estimate, the reference alone) before anything compiles or runs."""
    session = Session(task, Path(task.path), "reference", ev, device, size, timeout, seed)
    session.enter_gate()
    try:
        session.probe()
    finally:
        session.leave_gate()
