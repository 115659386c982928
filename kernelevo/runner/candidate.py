"""Inside a candidate process: build ModelNew, run it on inputs it is given, hand back outputs as data.

This is the only place a candidate's forward runs for verification or timing. Nothing
here decides anything: inputs arrive as shared memory (CPU) or CUDA IPC handles (GPU),
outputs go back the same way, and what this process reports about itself (ops it
dispatched, kernels it launched, its own timings) can only count against the candidate
or be cross-checked by the judge. The process never sees the task's reference module.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from kernelevo import tensor_channel
from kernelevo.backends.nvcc import NOT_RUN
from kernelevo.checks.compare import flatten_outputs
from kernelevo.checks.opwatch import (
    LAUNCHES,
    DataFlow,
    OpRecorder,
    _storages,
    install_launch_counters,
    profile_kernels,
    total_launches,
)
from kernelevo.checks.weights import built_from_seed
from kernelevo.runner.candidate_failure import (
    CandidateFailure,
    location,
    needs_a_gpu,
    out_of_memory,
    requested_gib,
    trim_traceback,
)
from kernelevo.runner.reference_weights import load_reference_weights
from kernelevo.tensor_channel import ChannelError, export_tensor, open_tensor, open_values, placed
from kernelevo.worker import candidate_replies as cp
from kernelevo.worker import candidate_requests as cr
from kernelevo.worker.protocol import RequestError

MAX_EXCHANGE_BYTES = 1 << 40


@contextmanager
def poisoned_allocations(enabled: bool = True) -> Iterator[None]:
    """New tensors are filled with NaN (max int for integers) so unwritten output elements fail."""
    if not enabled:
        yield
        return
    prev_det = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    prev_fill = torch.utils.deterministic.fill_uninitialized_memory
    deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.utils.deterministic.fill_uninitialized_memory = prev_fill
        deterministic_algorithms(prev_det, warn_only=prev_warn)


def deterministic_algorithms(mode: bool, warn_only: bool) -> None:
    """`torch.use_deterministic_algorithms` without its import of torch._inductor, which imports
    torch._dynamo: seconds in every candidate process (4-5 s on the H200). Inductor's own flag
    is set as torch sets it wherever Inductor is loaded; nothing else reads it."""
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None:  # another torch: its own function
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
        return
    config: Any = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.deterministic = mode
    setter(mode, warn_only=warn_only)


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    a0, b0 = sa.data_ptr(), sb.data_ptr()
    return a0 < b0 + sb.nbytes() and b0 < a0 + sa.nbytes()


class CandidateProcess:
    """One candidate, one process: requests arrive in order from the engine (through the runner host)."""

    _keep: list[Any] | None  # the last outputs exported, set by _export

    def __init__(self) -> None:
        self.new: torch.nn.Module | None = None
        self.sets: dict[str, list[Any]] = {}
        self.mirrors: dict[str, list[tuple[torch.Tensor, torch.Tensor]]] = {}
        self.via = "ipc"
        self.device = torch.device("cpu")
        self.ops: dict[str, int] = {}
        self.runs = 0

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            req = cr.parse(message)
        except RequestError as exc:
            return {"error": str(exc)}
        if self.new is None and not isinstance(req, cr.Load):
            return {"error": "no candidate loaded"}
        try:
            answer = self.answer(req)
            return {"error": f"unknown op {req.op!r}"} if answer is None else answer.wire()
        except CandidateFailure as exc:
            return exc.to_dict()
        except ChannelError as exc:
            return {"error": f"exchange: {exc}"}

    def answer(self, req: cr.CandidateRequest[Any]) -> cp.CandidateAnswer | None:
        if isinstance(req, cr.Load):
            return self.load(req)
        if isinstance(req, cr.Run):
            return self.run(req)
        if isinstance(req, cr.Repeat):
            return self.repeat(req)
        if isinstance(req, cr.Time):
            return self.time(req)
        if isinstance(req, cr.Profile):
            return self.profile(req)
        if isinstance(req, cr.CopyOut):
            return self.copy_out(req)
        if isinstance(req, cr.Drop):
            self.sets.pop(req.set, None)
            self.mirrors.pop(req.set, None)
            return cp.SetDropped()
        if isinstance(req, cr.Report):
            return cp.Reported(
                ops=dict(self.ops),
                launches=total_launches(),
                kernels=dict(LAUNCHES.kernels),
                signatures=dict(LAUNCHES.signatures),
                dynamo="torch._dynamo" in sys.modules,  # seconds, if this process paid it
            )
        return None

    # -- loading -----------------------------------------------------------------------
    def load(self, req: cr.Load) -> cp.Loaded:
        t0 = time.perf_counter()
        from kernelevo.backends.inline import install_load_inline_guard
        from kernelevo.task import import_file

        self.path, self.folder = req.candidate_path, req.exchange
        self.device = torch.device(req.device or "cpu")
        self.via = req.via or "ipc"
        tensor_channel.accept_cuda_ipc()  # this process maps the judge's blocks (cuda_ipc.py)
        install_launch_counters()
        install_load_inline_guard()
        try:
            module = import_file(self.path, "candidate")
        except SyntaxError as exc:
            raise CandidateFailure(
                "compile_error", f"candidate line {exc.lineno}: syntax error: {exc.msg}"
            ) from exc
        except Exception as exc:
            raise self.error(exc, "importing the candidate") from exc
        if not hasattr(module, "ModelNew"):
            raise CandidateFailure("rejected", "the candidate defines no ModelNew")
        init = open_values(req.init or [], self.folder, MAX_EXCHANGE_BYTES)
        try:
            if not tensor_channel.probe_arrived(req.probe, self.folder, self.device, self.via):
                return cp.Loaded(
                    ipc_failed="the probe tensor did not arrive by CUDA IPC with its values"
                )
            weights, initial = (
                {
                    k: placed(v, open_tensor(v, self.folder, MAX_EXCHANGE_BYTES))
                    for k, v in (given or {}).items()
                }
                for given in (req.weights, req.initial)
            )
        except (RuntimeError, OSError) as exc:  # a CUDA IPC handle that cannot be opened here
            return cp.Loaded(ipc_failed=f"{type(exc).__name__}: {str(exc)[:300]}")
        seed = int(req.seed or 0)
        try:  # where the judge drew the reference's weights (it builds again where this one did)
            new, built_on = built_from_seed(
                lambda: module.ModelNew(*init), seed, self.device, gpu=req.build_on == "cuda"
            )
            self.new = new.to(self.device).eval()
        except Exception as exc:
            raise self.error(exc, "constructing ModelNew") from exc
        rule = load_reference_weights(self.new, weights, initial, seed, bool(req.same_seed_only))
        del weights, initial
        if self.device.type == "cuda":  # its reply means nothing of its own is left on the GPU
            try:
                torch.cuda.synchronize(self.device)
            except Exception as exc:
                raise self.error(exc, "constructing ModelNew") from exc
        return cp.Loaded(
            loaded=True, load_s=round(time.perf_counter() - t0, 4), built_on=built_on, **rule
        )

    def error(self, exc: BaseException, when: str) -> CandidateFailure:
        name = type(exc).__name__
        if name == "CudaUnavailable":
            said = str(exc)
            return CandidateFailure(
                "unverified",
                said if said.startswith(NOT_RUN) else f"{NOT_RUN}: {said}",
            )
        if name in ("CudaCompileError", "CompilationError") or "CompilationError" in name:
            return CandidateFailure(
                "compile_error",
                f"compile error while {when}: {exc}",
                trim_traceback(exc, self.path),
            )
        if out_of_memory(exc):
            need = requested_gib(str(exc))
            return CandidateFailure(
                "runtime_error",
                f"out of memory while {when}"
                + (f" (needs ~{need:.1f} GiB more)" if need is not None else "")
                + f": {str(exc)[:300]}",
            )
        where = location(exc, self.path).replace(self.path, "candidate")
        if needs_a_gpu(exc, self.device):
            return CandidateFailure(
                "unverified", f"not run: it needs a GPU, none here ({where}: {str(exc)[:200]})"
            )
        return CandidateFailure(
            "runtime_error",
            f"{name} while {when} ({where}): {str(exc)[:800]}",
            trim_traceback(exc, self.path),
        )

    # -- running -------------------------------------------------------------------------
    def _args(self, key: str, given: list[Any]) -> list[Any]:
        """Inputs of one set, mapped once: running the same set again uses the same buffers (pointers)."""
        if key not in self.sets:
            self.mirrors[key] = []
            self.sets[key] = open_values(
                given or [], self.folder, MAX_EXCHANGE_BYTES, self.mirrors[key]
            )
        else:
            for mapped, t in self.mirrors.get(
                key, []
            ):  # the judge may have written new values into the file
                t.copy_(mapped)
        return self.sets[key]

    def _write_back(self, key: str) -> None:
        """Through files, the judge sees what the candidate did to its inputs only if they go back."""
        for mapped, t in self.mirrors.get(key, []):
            mapped.copy_(t)

    def _forward(self, args: list[Any], label: str, record: bool = True) -> Any:
        assert self.new is not None
        self.flow = DataFlow(
            _storages(args) | _storages(list(self.new.parameters()) + list(self.new.buffers()))
        )
        rec = OpRecorder(self.flow)
        try:
            with torch.no_grad(), poisoned_allocations(), rec:
                out = self.new(*args)
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
        except Exception as exc:
            raise self.error(exc, f"running forward on {label}") from exc
        if record:
            for k, v in rec.ops.items():
                self.ops[k] = self.ops.get(k, 0) + v
        return out

    def _export(self, out: Any, args: list[Any], tag: str, **counts: Any) -> cp.Outputs:
        assert self.new is not None
        outs = flatten_outputs(out)
        inputs = [a for a in flatten_outputs(list(args)) if isinstance(a, torch.Tensor)]
        params = list(self.new.parameters())
        aliased = [
            i
            for i, o in enumerate(outs)
            if isinstance(o, torch.Tensor)
            and (any(_overlaps(o, t) for t in inputs) or any(_overlaps(o, p) for p in params))
        ]
        described = []
        for i, o in enumerate(outs):
            if isinstance(o, torch.Tensor) and o.device.type == "cuda" and self.via == "ipc":
                # CUDA IPC opens only handles exported outside a PID namespace (the judge's): the judge
                # gives buffers of these shapes and the outputs are copied into them (copy_out)
                described.append(
                    {
                        "pending": {
                            "dtype": str(o.dtype).replace("torch.", ""),
                            "shape": list(o.shape),
                        },
                        "plain": type(o) is torch.Tensor,
                    }
                )
            elif isinstance(o, torch.Tensor):
                described.append(
                    {
                        "tensor": export_tensor(o, self.folder, f"out-{tag}-{i}", self.via),
                        "plain": type(o) is torch.Tensor,
                    }
                )
            elif o is None or isinstance(o, (bool, int, float, str)):
                described.append({"value": o})
            else:
                described.append({"other": type(o).__name__})
        self._keep = outs  # CUDA outputs stay alive until the judge has read them (next request)
        return cp.Outputs(outputs=described, aliased=aliased, **counts)

    def copy_out(self, req: cr.CopyOut) -> cp.CopiedOut:
        """The last outputs copied into the judge's buffers (CUDA IPC handles the judge exported)."""
        outs = [o for o in (self._keep or []) if isinstance(o, torch.Tensor)]
        descs = list(req.buffers or [])
        if len(descs) != len(outs):
            return cp.CopiedOut(error="buffer count does not match the outputs")
        for o, d in zip(outs, descs, strict=True):
            dst = open_tensor(d, self.folder, MAX_EXCHANGE_BYTES)
            if dst.shape != o.shape or dst.dtype != o.dtype:
                return cp.CopiedOut(error="a buffer does not match its output")
            dst.copy_(o)
            del dst
        torch.cuda.synchronize(self.device)
        self._keep = None
        return cp.CopiedOut(copied=len(outs))

    def run(self, req: cr.Run) -> cp.Outputs:
        self._keep = None
        args = self._args(req.set, req.args)
        launches0 = total_launches()
        out = self._forward(args, req.label or "an input set")
        self._write_back(req.set)
        self.runs += 1
        flow = self.flow
        untraced = [
            i
            for i, o in enumerate(o for o in flatten_outputs(out) if isinstance(o, torch.Tensor))
            if flow.calls and not flow.reaches(o)
        ]
        return self._export(
            out,
            args,
            f"{req.set}-{self.runs}",
            launches=total_launches() - launches0,
            custom_calls=flow.calls,
            untraced=untraced,
        )

    def repeat(self, req: cr.Repeat) -> cp.Outputs:
        """`n` calls back to back on one set, then one synchronisation; the last call's outputs go back."""
        self._keep = None
        args = self._args(req.set, req.args)
        n = max(1, min(int(req.n or 1), 100000))
        assert self.new is not None
        try:
            with torch.no_grad():
                for _ in range(n):
                    out = self.new(*args)
                if self.device.type == "cuda":
                    torch.cuda.synchronize(self.device)
        except Exception as exc:
            raise self.error(exc, "running forward back to back") from exc
        self.runs += 1
        return self._export(out, args, f"{req.set}-{self.runs}")

    def time(self, req: cr.Time) -> cp.Timed:
        """The candidate's own timing (events, L2 flush) on the judge's timing sets."""
        from kernelevo.measure import timing

        self._keep = None
        sets = [self._args(f"time-{i}", a) for i, a in enumerate(req.sets or [])]
        if not sets:
            return cp.Timed(error="no timing sets")
        assert self.new is not None
        new = self.new
        set_bytes = sum(
            t.numel() * t.element_size() for t in sets[0] if isinstance(t, torch.Tensor)
        )
        try:
            with torch.no_grad():
                results = timing.time_interleaved(
                    {"candidate": lambda i: new(*sets[i])},
                    n_input_sets=len(sets),
                    input_set_bytes=set_bytes,
                    device=self.device,
                    max_time_s=float(req.max_time_s),
                )
        except Exception as exc:
            raise self.error(exc, "timing") from exc
        return cp.Timed(timing=results["candidate"].to_dict())

    def profile(self, req: cr.Profile) -> cp.Profiled:
        args = self._args(req.set, req.args)
        assert self.new is not None
        new = self.new
        with torch.no_grad():
            names = profile_kernels(lambda: new(*args))
        return cp.Profiled(kernels=names)
