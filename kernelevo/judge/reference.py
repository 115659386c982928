"""The task's side, inside the judge process: the reference model, its input sets and what it needs.

The reference is the user's code: trusted differently from a candidate, but it can still
be broken. Everything it does wrong is raised as TaskProblem with what to fix, so a
broken task is never reported as a candidate's failure.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from kernelevo.checks.compare import flatten_outputs
from kernelevo.checks.weights import built_from_seed
from kernelevo.task import load_task_module, task_location, task_step
from kernelevo.tensor_channel import crossable

GiB = float(1 << 30)


class TaskProblem(Exception):
    """The task itself failed (reference or inputs); reported to the user, exit code 2."""


def tensors(values: Any) -> list[torch.Tensor]:
    return [v for v in flatten_outputs(list(values)) if isinstance(v, torch.Tensor)]


def nbytes(values: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tensors(values))


def to_device(value: Any, device: torch.device) -> Any:
    """Tensors (also inside lists and tuples) moved to `device`; other values as they are."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


@dataclass
class MemoryNeed:
    """Bytes one verification holds at its peak, from the task run on meta tensors (nothing allocated)."""

    inputs: int
    outputs: int
    weights: int

    @property
    def total(self) -> int:
        # judge: weights, one input set and the copy the candidate sees, the reference's output and
        # intermediates (about one more output), the mapped candidate output; candidate: its weights,
        # output and intermediates
        return (
            2 * self.weights + 2 * self.inputs + 4 * self.outputs + max(self.inputs, self.outputs)
        )

    def describe(self) -> str:
        return (
            f"~{self.total / GiB:.1f} GiB (inputs {self.inputs / GiB:.2f} GiB per set, outputs "
            f"{self.outputs / GiB:.2f} GiB, weights {self.weights / GiB:.2f} GiB)"
        )


def available_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as f:
            info = {ln.split(":")[0]: int(ln.split()[1]) * 1024 for ln in f if ":" in ln}
        return info.get("MemAvailable", 1 << 62)
    except OSError:
        return 1 << 62


def total_gib(device: torch.device) -> float:
    """The device's whole memory (a GPU's, else the machine's), for the dispatcher's memory rule."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory / GiB
    try:
        with open("/proc/meminfo") as f:
            info = {ln.split(":")[0]: int(ln.split()[1]) * 1024 for ln in f if ":" in ln}
        return info.get("MemTotal", 0) / GiB
    except OSError:
        return 0.0


UNSET_ABS = 1e6  # a weight beyond this, or not finite, is memory nobody initialized


def initialized(p: torch.Tensor) -> bool:
    """Whether a floating-point weight holds values a model could have set (finite, not huge)."""
    return not p.numel() or bool(torch.isfinite(p).all() and p.abs().max() <= UNSET_ABS)


class Reference:
    """The loaded task at one size on one device."""

    def __init__(self, path: str, size: str, device: torch.device) -> None:
        self.path, self.size, self.device = path, size, device
        if device.type == "cuda" and not torch.cuda.is_available():  # not the task's fault
            why = "this PyTorch has no CUDA" if torch.version.cuda is None else "PyTorch finds none"
            raise TaskProblem(f"no CUDA GPU on this machine ({why}); use --device cpu")
        try:
            self.module = load_task_module(path, size)
        except Exception as exc:
            raise TaskProblem(
                f"{task_location(exc, path)}: cannot load task: {type(exc).__name__}: {exc}"
            ) from exc
        self.tolerance = self.module.__dict__.get("TOLERANCE")
        self.init = self.call(lambda: list(self.module.get_init_inputs()), "get_init_inputs()")
        for i, v in enumerate(flatten_outputs(self.init)):
            if not crossable(v):  # a config object crosses as its fields
                raise TaskProblem(
                    f"{path}: get_init_inputs() item {i} is a {type(v).__name__}; give plain values"
                )
        self.model: torch.nn.Module | None = None
        self.measured: MemoryNeed | None = None  # the need `check_fits` last went by
        self.built_on = "cpu"  # where the last build drew its weights: ModelNew is built there too

    def call(self, fn: Callable[[], Any], what: str) -> Any:
        return task_step(self.path, what, fn, TaskProblem)

    def need(self) -> MemoryNeed:
        """Run get_inputs() and the forward on meta tensors: shapes and bytes without allocating."""
        with torch.device("meta"):
            inputs = self.call(lambda: list(self.module.get_inputs()), "get_inputs()")
            model = self.call(lambda: self.module.Model(*self.init), "Model(*get_init_inputs())")
        weights = sum(
            p.numel() * p.element_size() for p in list(model.parameters()) + list(model.buffers())
        )
        in_bytes = nbytes(inputs)
        try:
            with torch.no_grad():
                out_bytes = nbytes(
                    flatten_outputs(model(*[to_device(a, torch.device("meta")) for a in inputs]))
                )
        except (
            Exception
        ):  # data-dependent ops cannot run on meta: assume outputs as large as inputs
            out_bytes = in_bytes
        return MemoryNeed(in_bytes, out_bytes, weights)

    def memory_plan(self, need: MemoryNeed) -> dict[str, Any]:
        """The task's need and the device's memory, as the engine's GPU gate reads them."""
        return {
            "need": [need.inputs, need.outputs, need.weights],
            "need_gib": round(need.total / GiB, 3),
            "device_gib": round(total_gib(self.device), 3),
        }

    def check_fits(self, known: list[int] | None = None) -> MemoryNeed:
        """`known`: the need an earlier probe of this task measured (the engine keeps it): the task
        then does not run on meta tensors again (whose checks import sympy, ~0.8 s in a new judge)."""
        ok = isinstance(known, list) and len(known) == 3 and all(isinstance(n, int) for n in known)
        need = self.measured = MemoryNeed(*known) if ok and known else self.need()
        have = available_bytes(self.device)
        if need.total > 0.9 * have:
            raise TaskProblem(
                f"{self.path}: the task needs {need.describe()} but the {self.device.type} has "
                f"{have / GiB:.1f} GiB free; make the shapes in get_inputs() smaller (or add "
                "SMALL = {...} overrides and verify with --size small)"
            )
        return need

    def build(self, seed: int, randomise: bool = True, on: str | None = None) -> torch.nn.Module:
        """Model from `seed`, its weights then randomised (degenerate initial weights would hide a
        kernel that ignores them). Built on the GPU where the constructor allows it, else on the
        CPU (`on="cpu"` asks for it; checks/weights.py's built_from_seed): `built_on` says which,
        and the candidate builds there too."""
        ref, self.built_on = built_from_seed(
            lambda: self.call(lambda: self.module.Model(*self.init), "Model(*get_init_inputs())"),
            seed,
            self.device,
            gpu=on != "cpu",
        )
        ref = self.call(lambda: ref.to(self.device).eval(), "Model.to(device)")
        self.model = ref
        if randomise:
            self.randomise()
        return ref

    def randomise(self) -> None:
        """Noise on every weight, at its own spread; a weight left uninitialized (torch.empty, for
        the enclosing model to fill, as Hugging Face's expert layers do) is drawn afresh."""
        assert self.model is not None
        with torch.no_grad():
            for p in self.model.parameters():
                if not p.is_floating_point():
                    continue
                if not initialized(p):
                    p.normal_(0.0, 0.02)
                    continue
                scale = max(float(p.detach().float().std()) if p.numel() > 1 else 0.0, 0.1)
                p.add_(torch.randn_like(p) * scale)

    def inputs(self, seed: int, extra: int | None = None) -> list[Any]:
        torch.manual_seed(seed)
        with torch.device(
            self.device
        ):  # random inputs drawn on the device: CPU generation of GBs takes seconds
            if extra is None:
                values = self.call(lambda: list(self.module.get_inputs()), "get_inputs()")
            else:
                extras = self.call(
                    lambda: list(self.module.get_extra_inputs()), "get_extra_inputs()"
                )
                values = list(extras[extra])
        for i, t in enumerate(tensors(values)):
            if t.is_floating_point() and t.numel() and not bool(t.any()):
                raise TaskProblem(
                    f"{self.path}: get_inputs() returned an all-zero tensor (input {i}); "
                    "inputs must be random"
                )
            if t.is_floating_point() and t.numel() and not bool(torch.isfinite(t).all()):
                raise TaskProblem(
                    f"{self.path}: get_inputs() returned NaN or Inf values (input {i}); "
                    "inputs must be finite"
                )
        return to_device(values, self.device)

    def n_extra(self) -> int:
        fn = getattr(self.module, "get_extra_inputs", None)
        if fn is None:
            return 0
        with torch.device("meta"):
            return len(self.call(lambda: list(fn()), "get_extra_inputs()"))

    def forward(self, args: list[Any]) -> Any:
        assert self.model is not None
        model = self.model
        with torch.no_grad():
            out = self.call(lambda: model(*args), "Model.forward")
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return out


def fingerprint(values: list[Any]) -> list[int]:
    """Exact content of each input tensor, cheaply: an integer mix of its bit patterns, taken in chunks
    (a copy of a 16 GiB input would cost another 16 GiB)."""
    out = []
    for t in tensors(values):
        flat = t.detach().reshape(-1)
        if flat.dtype.is_floating_point or flat.dtype.is_complex:
            width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[
                flat.element_size()
            ]
            flat = (
                flat.contiguous().view(width)
                if not flat.dtype.is_complex
                else torch.view_as_real(flat).reshape(-1)
            )
            if flat.dtype.is_floating_point:
                flat = flat.contiguous().view({4: torch.int32, 8: torch.int64}[flat.element_size()])
        total = 0
        step = 1 << 24
        for start in range(0, flat.numel(), step):
            chunk = flat[start : start + step].to(torch.int64)
            weights = torch.arange(
                start + 1, start + 1 + chunk.numel(), device=chunk.device, dtype=torch.int64
            )
            total = (total * 1000003 + int((chunk * weights).sum()) + int(chunk.sum())) % (1 << 61)
        out.append(total)
    return out


def describe_args(args: list[Any]) -> list[dict[str, Any]]:
    """What the verdict records of an input set: shapes, dtypes, devices, plain values."""
    return [
        {
            "kind": "tensor",
            "shape": list(a.shape),
            "dtype": str(a.dtype).replace("torch.", ""),
            "device": a.device.type,
            "contiguous": a.is_contiguous(),
        }
        if isinstance(a, torch.Tensor)
        else {"kind": "value", "repr": repr(a)[:200]}
        for a in args
    ]


def release_memory(device: torch.device, large: bool = True) -> None:
    """Memory back to the device between phases; a collection only after large sets. It scans only
    what settle_heap has not set aside: ~0.2 s over torch's and Inductor's own objects otherwise."""
    if large:
        gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.ipc_collect()


def settle_heap(device: torch.device | None) -> None:
    """What is alive after a verification (the imported libraries, the loaded task, torch.compile's
    caches) is set aside from the collector, so the next verification's collections scan only its
    own objects; unsettle_heap gives it back when the task changes, and a dropped task's cycles
    (its classes, its module) are collected then. What the collection freed goes back to the
    device (its caching allocator emptied after it, not before)."""
    gc.collect()
    gc.freeze()
    if device is not None:
        release_memory(device, large=False)


def unsettle_heap() -> None:
    gc.unfreeze()
