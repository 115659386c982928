"""The judge process: reference outputs, comparisons and baseline timings. It never runs candidate code.

It holds the task's reference (the user's code), draws every input set, shares inputs
and weights with the candidate process as data, and decides each check from the
candidate's outputs (mapped back as data): outputs match, inputs unchanged, new values in
the same buffers. Baseline timings and the roofline are taken here too, where no
candidate can slow the reference down or patch a timer. Every reply echoes the
request's nonce, so a frame a candidate forged on some pipe is not taken for the judge's.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from kernelevo import cuda_ipc
from kernelevo.checks.opwatch import OpRecorder
from kernelevo.judge import baselines, host_probe, launchers, task_faults
from kernelevo.judge import replies as rp
from kernelevo.judge import requests as rq
from kernelevo.judge.candidate_exchange import (
    add_output_buffers,
    input_checks,
    received_outputs,
    share_inputs,
)
from kernelevo.judge.outputs import compare_any_size
from kernelevo.judge.policy_ops import PrecisionFacts, kernel_policy, library_policy
from kernelevo.judge.reference import (
    Reference,
    TaskProblem,
    available_bytes,
    describe_args,
    fingerprint,
    nbytes,
    release_memory,
    settle_heap,
    unsettle_heap,
)
from kernelevo.measure.timers import device_l2_bytes, rotation_set_count
from kernelevo.tensor_channel import (
    ChannelError,
    export_tensor,
    export_values,
    release_kept,
    tensors_in,
)
from kernelevo.verdict import Check
from kernelevo.worker.protocol import Reply

MAX_TIMING_SETS = 8


class Judge:
    """The judge's state between requests: the task's reference, the input sets, the precision
    the outputs have met so far, and the baselines timed here."""

    # set by op_begin and op_end (declared here for the type checker)
    folder: str
    precision: str | None
    precision_failure: tuple[str, dict[str, Any]] | None
    precision_rel_l2: float
    ref_tf32_conv: bool

    def __init__(self) -> None:
        self.refs: dict[str, Reference] = {}
        self.probed: dict[str, dict[str, Any]] = {}
        self.baselines: dict[str, dict[str, Any]] = {}
        self.ref: Reference | None = None
        self.sets: dict[str, dict[str, Any]] = {}
        self.ref_ops: set[str] = set()
        self.timing_sets: list[list[Any]] = []
        self.via = "ipc"
        self.outbufs: list[torch.Tensor] = []

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        """One frame from the engine: parsed into its request record, answered with its reply record."""
        try:
            req = rq.parse(message)
        except rq.RequestError as exc:
            return {"error": str(exc)}
        try:
            reply: Reply = getattr(self, "op_" + req.op)(req)
            return reply.wire()
        except TaskProblem as exc:
            return {"task_error": str(exc)}
        except ChannelError as exc:
            return {"channel_error": str(exc)}

    def _reference(self, req: rq.TaskRequest) -> Reference:
        device = torch.device(req.device or "cpu")
        key = f"{req.task_hash}|{req.size}|{device}"
        if key not in self.refs:
            unsettle_heap()  # the task this one replaces becomes collectable
            self.refs = {key: Reference(req.task_path, req.size or "default", device)}
        return self.refs[key]

    # -- the task on its own, before any candidate (task faults) --------------------------
    def op_probe(self, req: rq.Probe) -> rp.Probed:
        ref = self._reference(req)
        key = f"{req.task_hash}|{req.size}|{ref.device}"
        if key not in self.probed:
            self.probed[key] = task_faults.probe(ref, req.seed or 1)
        return rp.Probed(**self.probed[key])

    # -- one verification ----------------------------------------------------------------
    def op_begin(self, req: rq.Begin) -> rp.Begun:
        self.op_end(rq.End())
        ref = self.ref = self._reference(req)
        self.folder = req.exchange
        self.via = req.via or "ipc"
        if self.via == "ipc" and ref.device.type == "cuda" and not cuda_ipc.available():
            self.via = "file"  # the probe arrives without a handle: the candidate asks for files
        need = ref.check_fits(req.need)
        self.precision, self.precision_failure, self.precision_rel_l2 = None, None, 0.0
        model = ref.build(req.seed, randomise=False, on=req.build_on)
        self.initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
        initial = self._export(self.initial, "w0")
        ref.randomise()
        weights = self._export(model.state_dict(), "w")
        # opened first, values checked: does CUDA IPC cross into the candidate's sandbox?
        self.ipc_probe = torch.arange(1024, dtype=torch.float32, device=ref.device)
        return rp.Begun(
            init=export_values(list(ref.init), self.folder, "init", self.via),
            weights=weights,
            initial=initial,
            built_on=ref.built_on,
            probe=export_tensor(self.ipc_probe, self.folder, "probe", self.via),
            n_extra=ref.n_extra() if req.n_extra is None else int(req.n_extra),
            **ref.memory_plan(need),
        )

    def _export(self, state: dict[str, torch.Tensor], prefix: str) -> dict[str, Any]:
        return {
            k: export_tensor(v, self.folder, f"{prefix}-{i}", self.via)
            for i, (k, v) in enumerate(state.items())
        }

    def op_same_seed(self, req: rq.SameSeed) -> rp.SameSeedKept:
        """The reference keeps the weights the seed gave it (no weights could be matched)."""
        assert self.ref is not None and self.ref.model is not None
        self.ref.model.load_state_dict(self.initial)
        return rp.SameSeedKept()

    def op_seed_varies(self, req: rq.SeedVaries) -> rp.SeedVaried:
        from kernelevo.checks.weights import seed_varies_weights

        assert self.ref is not None
        return rp.SeedVaried(bool(seed_varies_weights(self.ref.module, req.seed)))

    def _compare(
        self, ref: Any, out: Any, args: list[Any] | None = None
    ) -> tuple[bool, str, dict[str, Any]]:
        """At the strictest precision met so far, an output that rounding may explain (exact_reference)
        judged by a float64 run first; a failure a lower precision passes is kept for the policy to decide."""
        from kernelevo.checks.compare import LEVEL_NAMES, loosest_needed
        from kernelevo.judge.exact_reference import applies, float64_opinion

        assert self.ref is not None
        hint = self.ref.tolerance
        passed, message, detail = compare_any_size(ref, out, hint, precision=self.precision)
        if passed or not detail.get("tolerance_failure"):
            return passed, message, detail
        if applies(detail) and args is not None and self.ref.model is not None:
            opinion = float64_opinion(self.ref.model, args, ref, out, hint, self.precision)
            if opinion is not None and opinion[0]:
                return opinion
            passed, message, detail = opinion or (passed, message, detail)  # with its figures
        level, message2, detail2 = loosest_needed(
            ref, out, hint, self.precision, compare=compare_any_size
        )
        if level is None:
            return passed, message, detail
        if self.precision_failure is None:
            self.precision_failure = (message, detail)
        self.precision = level
        rel_l2 = float(detail2.get("rel_l2", detail.get("rel_l2")) or 0.0)
        self.precision_rel_l2 = max(self.precision_rel_l2, rel_l2)
        return True, f"{message2} at {LEVEL_NAMES[level]} tolerance", detail2

    def _share(self, values: list[Any], prefix: str) -> tuple[list[Any], list[Any]]:
        assert self.ref is not None
        return share_inputs(values, self.folder, prefix, self.via, self.ref.device)

    def op_inputs(self, req: rq.Inputs) -> rp.InputsDrawn:
        assert self.ref is not None
        name = req.set
        values = self.ref.inputs(req.seed, req.extra)
        descs, shared = self._share(values, f"in-{name}")
        self.sets[name] = dict(args=values, shared=shared, print=fingerprint(shared), out=None)
        return rp.InputsDrawn(args=descs, summary=describe_args(values))

    def op_reference(self, req: rq.Reference) -> rp.ReferenceRan:
        assert self.ref is not None
        s, rec, t0 = self.sets[req.set], OpRecorder(), time.perf_counter()
        with rec:
            s["out"] = self.ref.forward(s["args"])
        self.ref_ops |= rec.compute_ops()
        self.ref_tf32_conv = self.ref_tf32_conv or rec.tf32_convolution
        return rp.ReferenceRan(ran=True, seconds=round(time.perf_counter() - t0, 4))

    def op_out_buffers(self, req: rq.OutBuffers) -> rp.BuffersExported:
        """Buffers for the candidate's CUDA outputs, exported from here (the direction CUDA IPC crosses
        into a sandbox); their total size is bounded by what the task's outputs can need."""
        assert self.ref is not None
        self.outbufs = []
        problem = add_output_buffers(
            self.outbufs,
            list(req.specs or []),
            4 * (self.ref.measured or self.ref.need()).outputs + (1 << 20),
            self.ref.device,
        )
        if problem:
            raise ChannelError(problem)
        return rp.BuffersExported(
            [export_tensor(b, self.folder, f"ob-{i}") for i, b in enumerate(self.outbufs)]
        )

    def op_compare(self, req: rq.Compare) -> rp.Compared:
        assert self.ref is not None
        s = self.sets[req.set]
        label = req.label or "input set"
        checks: list[Check] = []
        changed = [
            i
            for i, (a, b) in enumerate(zip(fingerprint(s["shared"]), s["print"], strict=True))
            if a != b
        ]
        aliased = req.aliased or []
        checks += input_checks(label, changed, aliased)
        if changed or aliased:
            return rp.Compared(checks)
        outs, problem = received_outputs(
            list(req.outputs or []),
            self.outbufs,
            self.folder,
            max(4 * nbytes([s["out"]]), 1 << 20),
        )
        detail: dict[str, Any] = {}
        if problem:
            passed, message = False, problem
        else:
            with torch.no_grad():
                passed, message, detail = self._compare(
                    s["out"], outs if len(outs) != 1 else outs[0], s["args"]
                )
        del outs
        self.outbufs = []
        checks.append(
            Check(
                req.name or f"match[{label}]",
                passed,
                f"{label}: {message}" + (req.suffix if not passed and req.suffix else ""),
                detail,
            )
        )
        if self.ref.device.type == "cuda":
            torch.cuda.ipc_collect()
        return rp.Compared(checks)

    def op_refill(self, req: rq.Refill) -> rp.Refilled:
        """New values written into the same buffers (a kernel caching results by pointer fails)."""
        assert self.ref is not None
        s = self.sets[req.set]
        fresh = tensors_in(self.ref.inputs(req.seed))
        for held in (tensors_in(s["args"]), s["shared"]):  # the reference's, the candidate's
            for dst, src in zip(held, fresh, strict=False):
                dst.copy_(src)
        del fresh
        if self.ref.device.type == "cuda":
            torch.cuda.synchronize(self.ref.device)  # written before the candidate reads them
        s["print"], s["out"] = fingerprint(s["shared"]), None
        return rp.Refilled()

    def op_drop(self, req: rq.Drop) -> rp.Dropped:
        s = self.sets.pop(req.set, None)
        large = s is not None and nbytes(s["args"]) > (256 << 20)
        del s
        if self.ref is not None:
            release_memory(self.ref.device, large)
        return rp.Dropped()

    def op_end(self, req: rq.End) -> rp.Ended:
        ops = sorted(self.ref_ops)
        self.sets.clear()
        release_kept()
        self.timing_sets = []
        self.timing_shared: list[list[Any]] = []
        self.ref_ops, self.ref_tf32_conv = set(), False  # did its convolution run in TF32?
        if self.ref is not None:
            self.ref.model = None
        settle_heap(self.ref.device if self.ref is not None else None)
        return rp.Ended(ops)

    def op_library_policy(self, req: rq.LibraryPolicy) -> rp.LibraryDecided:
        """The library-op rule, whether the custom kernels produced the outputs, and precision, from the
        candidate process's counts and this process's comparisons."""
        assert self.ref is not None
        return library_policy(
            req,
            self.ref_ops,
            PrecisionFacts(
                task=self.ref.module,
                precision=self.precision,
                precision_failure=self.precision_failure,
                precision_rel_l2=self.precision_rel_l2,
                reference_tf32=self.ref_tf32_conv,
            ),
        )

    def op_kernel_policy(self, req: rq.KernelPolicy) -> rp.KernelDecided:
        return kernel_policy(req, self.ref_ops)

    # -- timing ----------------------------------------------------------------------------
    def op_timing_sets(self, req: rq.TimingSets) -> rp.TimingSetsDrawn:
        """Input sets for timing: as many as rotate the inputs out of L2 (up to 8), within a quarter
        of the memory left beside what the candidate needs."""
        assert self.ref is not None
        self.sets.clear()
        release_memory(self.ref.device)
        first = self.ref.inputs(req.seed or 0)
        per_set = max(nbytes(first), 1)
        room = int(
            (available_bytes(self.ref.device) - float(req.reserve_bytes or 0)) * 0.25 // per_set
        )
        most = MAX_TIMING_SETS if self.via == "ipc" else 2  # through files each set costs ~0.3 s
        n = max(1, min(most, room, rotation_set_count(device_l2_bytes(self.ref.device), per_set)))
        self.timing_sets = [first] + [self.ref.inputs((req.seed or 0) + i) for i in range(1, n)]
        descs, self.timing_shared = [], []
        for i, values in enumerate(self.timing_sets):
            d, shared = self._share(values, f"time-{i}")
            self.timing_shared.append(shared)
            descs.append(d)
        self.timed_print = fingerprint(self.timing_shared[0])
        return rp.TimingSetsDrawn(descs)

    def op_baselines(self, req: rq.Baselines) -> rp.BaselinesTimed:
        assert self.ref is not None and self.ref.model is not None
        key = req.key
        cached = key in self.baselines
        stored = req.stored if not cached else None
        if isinstance(stored, dict):  # measured by a judge before, kept by the engine on disk
            self.baselines[key] = dict(stored)
        elif not cached:
            self.baselines[key] = baselines.time_baselines(self.ref, self.timing_sets, req)
        timed = {k: v for k, v in self.baselines[key].items() if k not in ("cached", "stored")}
        return rp.BaselinesTimed.parse(
            {**timed, "cached": cached or stored is not None, "stored": bool(stored)}
        )

    def op_bound(self, req: rq.Bound) -> rp.Bounded:
        assert self.ref is not None
        base = self.baselines[req.key]
        ok, why, detail = baselines.bound(
            base["work"],
            bool(base["tf32"]) or self.ref_tf32_conv,
            float(req.candidate_ms),
            float(base["eager"]["median_ms"]),
            self.ref.device,
        )
        return rp.Bounded(plausible=ok, note=why, roofline=detail)

    def op_host_probe(self, req: rq.HostProbe) -> rp.HostProbed:
        device = self.ref.device if self.ref is not None else torch.device("cpu")
        return rp.HostProbed(**host_probe.launch_wall(device))

    def op_launchers(self, req: rq.Launchers) -> rp.LaunchersBuilt:
        return launchers.build(req)

    def op_check_timed_output(self, req: rq.CheckTimedOutput) -> rp.Compared:
        """The output of the candidate's back-to-back calls on timing set 0, checked like any other;
        the reference runs once per timing set (on the judge's own copy of its inputs)."""
        assert self.ref is not None
        args, shared = self.timing_sets[0], self.timing_shared[0]
        earlier = self.sets.get("timed")
        out = earlier["out"] if earlier is not None else self.ref.forward(args)
        self.sets["timed"] = dict(args=args, shared=shared, print=self.timed_print, out=out)
        named = rq.Compare("timed", req.outputs, req.aliased, req.label, "timed_calls_output")
        return self.op_compare(named)


def main() -> int:
    import threading

    from kernelevo.judge.warmup import warm_up
    from kernelevo.worker import triton_key
    from kernelevo.worker.lazy_dynamo import defer_dynamo_import
    from kernelevo.worker.main import serve

    defer_dynamo_import()  # the probe's meta tensors and OpRecorder; a torch.compile baseline imports it
    threading.Thread(target=triton_key.remember, name="kernelevo-triton-key", daemon=True).start()
    judge = Judge()
    return serve({"judge": judge.handle}, route_all="judge", warm=lambda: warm_up(judge.handle))


if __name__ == "__main__":
    raise SystemExit(main())
