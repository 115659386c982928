"""How close a time is to the physical floor, and whether it is below it.

The roofline figures count each input (parameters and buffers included) read once, each
output written once, and only the FLOPs `FlopCounterMode` counts (matrix products,
convolutions, attention). What flags a time as faster than physics is only what is certain:
the compulsory traffic at the measured bandwidth. Every output must be written; inputs are
not compulsory, since a kernel may legitimately skip them (the masked half of a causal
softmax), and FLOPs never flag, since they are the reference algorithm's (a diagonal
matmul done elementwise needs none of them). A time that beats the floor by more than the
tolerance is not a speedup but a measurement or evaluation bug (or a reward hack). Compare
only flushed (cold-L2) times against these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

OVER_LIMIT_TOLERANCE = 0.10


@dataclass
class Work:
    bytes: int
    flops: int | None  # None: nothing FlopCounterMode counts (elementwise, reductions...)
    dtype: str = ""  # the widest floating dtype among the inputs, to pick the compute peak
    written: int | None = None  # bytes of the outputs alone: what no correct kernel can skip


@dataclass
class Roofline:
    bytes: int
    flops: int | None
    time_ms: float
    achieved_gbps: float
    achieved_tflops: float | None
    bw_fraction: float | None  # achieved over measured peak
    flop_fraction: float | None
    bound: str  # "memory" | "compute": the larger of the two floor times
    over_limit: bool
    floor_ms: float | None  # max(bytes / peak bandwidth, flops / peak rate)
    peak_gbps: float | None = None
    peak_tflops: float | None = None
    tolerance: float = OVER_LIMIT_TOLERANCE
    written_fraction: float | None = (
        None  # outputs-only bandwidth over the peak: the fraction that flags
    )
    written: int | None = None  # the compulsory bytes: outputs written once

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tensors(obj: Any) -> Iterable[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v)


def _storage_bytes(tensors: Iterable[torch.Tensor]) -> dict[int, int]:
    """Bytes per storage: distinct views summed, capped at the storage (broadcasts, overlaps)."""
    spans: dict[int, set[tuple[int, int]]] = {}
    size: dict[int, int] = {}
    for t in tensors:
        st = t.untyped_storage()
        spans.setdefault(st.data_ptr(), set()).add((t.data_ptr(), t.numel() * t.element_size()))
        size[st.data_ptr()] = st.nbytes()
    return {k: min(sum(n for _, n in v), size[k]) for k, v in spans.items()}


def written_bytes(inputs: Any, outputs: Any, params: Iterable[torch.Tensor] = ()) -> int:
    """Bytes of the outputs that do not share storage with an input or parameter."""
    read = _storage_bytes(list(_tensors(inputs)) + list(params))
    return sum(n for k, n in _storage_bytes(_tensors(outputs)).items() if k not in read)


def io_bytes(inputs: Any, outputs: Any, params: Iterable[torch.Tensor] = ()) -> int:
    """Bytes read (each input and parameter once) plus bytes written (each output once).

    A tensor passed twice counts once; an output that shares storage with an input (a view, an
    in-place result) counts as not written, which keeps the figure a lower bound.
    """
    read = _storage_bytes(list(_tensors(inputs)) + list(params))
    written = _storage_bytes(_tensors(outputs))
    return sum(read.values()) + sum(n for k, n in written.items() if k not in read)


def count_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[int | None, Any]:
    """(FLOPs counted by FlopCounterMode or None when it counts nothing, fn's output)."""
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = fn(*args, **kwargs)
    total = int(counter.get_total_flops())
    return (total if total > 0 else None), out


def widest_float_dtype(inputs: Any, params: Iterable[torch.Tensor] = ()) -> torch.dtype | None:
    best = None
    for t in list(_tensors(inputs)) + list(params):
        if t.is_floating_point() and (best is None or t.element_size() > best.itemsize):
            best = t.dtype
    return best


def measure_work(model: Callable[..., Any], inputs: Sequence[Any]) -> Work:
    """Run the reference once (no grad) and count its minimal bytes and FLOPs."""
    params: list[torch.Tensor] = []
    if isinstance(model, torch.nn.Module):
        params = list(model.parameters()) + list(model.buffers())
    flops, out = count_flops(model, *inputs)
    dtype = widest_float_dtype(inputs, params)
    return Work(
        bytes=io_bytes(inputs, out, params),
        flops=flops,
        dtype=str(dtype).replace("torch.", "") if dtype else "",
        written=written_bytes(inputs, out, params),
    )


def compute_peak_tflops(peaks: Any, dtype: str | torch.dtype | None) -> float | None:
    """The measured GEMM peak that bounds arithmetic in `dtype`; None where none was measured.

    float32 maps to the no-TF32 peak: a float32 task computed with TF32 is lowered precision.
    """
    if peaks is None or dtype is None:
        return None
    name = str(dtype).replace("torch.", "")
    if name in ("bfloat16", "float16"):
        return getattr(peaks, "bf16_tflops", None)
    if name == "float32":
        return getattr(peaks, "fp32_tflops", None)
    return None


def roofline(
    work_bytes: int,
    flops: int | None,
    time_ms: float,
    *,
    peak_gbps: float | None,
    peak_tflops: float | None,
    tolerance: float = OVER_LIMIT_TOLERANCE,
    written: int | None = None,
) -> Roofline:
    """`written`: the output bytes; when given, only they set the bandwidth floor that flags a time."""
    if time_ms <= 0:
        raise ValueError(f"time must be positive, got {time_ms} ms")
    seconds = time_ms / 1e3
    gbps = work_bytes / seconds / 1e9
    tflops = flops / seconds / 1e12 if flops else None
    bw_frac = gbps / peak_gbps if peak_gbps else None
    flop_frac = tflops / peak_tflops if (tflops is not None and peak_tflops) else None
    mem_floor = work_bytes / (peak_gbps * 1e9) * 1e3 if peak_gbps else None
    flop_floor = flops / (peak_tflops * 1e12) * 1e3 if (flops and peak_tflops) else None
    floors = [f for f in (mem_floor, flop_floor) if f is not None]
    bound = (
        "compute"
        if (flop_floor is not None and (mem_floor is None or flop_floor > mem_floor))
        else "memory"
    )
    written_frac = (
        (written / seconds / 1e9 / peak_gbps) if (written is not None and peak_gbps) else None
    )
    floor_frac = written_frac if written is not None else bw_frac
    over = floor_frac is not None and floor_frac > 1 + tolerance
    return Roofline(
        bytes=work_bytes,
        flops=flops,
        time_ms=time_ms,
        achieved_gbps=gbps,
        achieved_tflops=tflops,
        bw_fraction=bw_frac,
        flop_fraction=flop_frac,
        bound=bound,
        over_limit=over,
        floor_ms=max(floors) if floors else None,
        peak_gbps=peak_gbps,
        peak_tflops=peak_tflops,
        tolerance=tolerance,
        written_fraction=written_frac,
        written=written,
    )


def plausible(candidate: Roofline, reference: Roofline | None = None) -> tuple[bool, str]:
    """Whether a candidate's time is physically possible; the reason says why not.

    If the reference itself beats the floor, the byte count is not a lower bound for this task
    (e.g. a gather that reads a few rows of a large table), so the check cannot judge.
    """
    if not candidate.over_limit:
        return True, ""
    if reference is not None and reference.over_limit:
        return True, (
            "roofline check skipped: the reference also exceeds the measured peak, so "
            "the byte/FLOP count is not a lower bound for this task"
        )
    if candidate.written is not None and candidate.peak_gbps:
        floor_ms = candidate.written / (candidate.peak_gbps * 1e9) * 1e3
        what = f"writing the outputs alone ({candidate.written} bytes)"
    else:
        floor_ms = (
            candidate.bytes / (candidate.peak_gbps * 1e9) * 1e3 if candidate.peak_gbps else 0.0
        )
        what = f"reading the inputs and writing the outputs ({candidate.bytes} bytes)"
    return False, (
        f"faster than physically possible: {what} at the measured {candidate.peak_gbps:.0f} GB/s takes "
        f"at least {floor_ms:.4g} ms, the candidate took {candidate.time_ms:.4g} ms: suspect an "
        "evaluation bug or skipped work"
    )
