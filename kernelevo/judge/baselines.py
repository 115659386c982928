"""Eager and torch.compile baselines and the physical bound, timed in the judge process.

They run where no candidate code ever ran, so a candidate cannot slow the reference
down or patch the timer to buy a speedup. A judge process keeps them per task, size and
GPU, so the candidates of one search pay for them once.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from kernelevo.judge.reference import Reference, nbytes
from kernelevo.judge.requests import Baselines
from kernelevo.measure.precision import fp32_matmul, task_allows_tf32
from kernelevo.worker.harness_integrity import TrustedThreads

_INFO: dict[str, Any] = {}


def time_baselines(ref: Reference, sets: list[list[Any]], req: Baselines) -> dict[str, Any]:
    """Timings of eager (and torch.compile, unless `compile_mode` is None) plus the work count."""
    from kernelevo.measure import timing
    from kernelevo.measure.compiled_baseline import compile_baseline, first_call
    from kernelevo.measure.device_info import device_info
    from kernelevo.measure.roofline import measure_work

    assert ref.model is not None
    model, device = ref.model, ref.device
    key = str(device)
    if key not in _INFO:
        _INFO[key] = device_info(device)
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    fns: dict[str, Any] = {}
    tf32 = task_allows_tf32(ref.module) or bool(
        req.allow_tf32
    )  # the user accepted TF32 (--allow-tf32)
    mode = req.compile_mode
    compile_error = None
    with torch.no_grad(), fp32_matmul(tf32):
        fns["eager"] = lambda i: model(*sets[i])
        if mode:
            with TrustedThreads():
                compiled, compile_error = compile_baseline(model, mode)
                if compiled is not None:
                    _, compile_error, _ = first_call(compiled, sets[0])
            if compile_error is None and compiled is not None:
                fns["compile"] = lambda i: compiled(*sets[i])
        phases["compile_baseline_s"] = round(time.perf_counter() - t0, 4)
        results = timing.time_interleaved(
            fns,
            n_input_sets=len(sets),
            input_set_bytes=nbytes(sets[0]),
            max_time_s=float(req.max_time_s),
            device=device,
            trusted=True,
        )
        work = measure_work(model, sets[0])
    phases["baselines_s"] = round(time.perf_counter() - t0, 4)
    return {
        "eager": results["eager"].to_dict(),
        "compile": results["compile"].to_dict() if "compile" in results else None,
        "compile_error": compile_error,
        "compile_mode": mode,
        "tf32": tf32,
        "phases": phases,
        "work": {
            "bytes": work.bytes,
            "flops": work.flops,
            "dtype": work.dtype,
            "written": work.written,
        },
        "device": _INFO[key],
    }


def bound(
    work: dict[str, Any], tf32: bool, cand_ms: float, eager_ms: float, device: torch.device
) -> tuple[bool, str, dict[str, Any]]:
    """The compulsory-traffic and compute bound for the candidate's time, from measured peaks."""
    from kernelevo.measure.device_peaks import get_peaks
    from kernelevo.measure.roofline import compute_peak_tflops, plausible, roofline

    peaks = get_peaks(device.index if device.index is not None else 0)
    peak_gbps = peaks.copy_gbps if peaks else None
    peak_tflops = compute_peak_tflops(
        peaks, "bfloat16" if tf32 and work["dtype"] == "float32" else work["dtype"]
    )
    rl = roofline(
        work["bytes"],
        work["flops"],
        cand_ms,
        peak_gbps=peak_gbps,
        peak_tflops=peak_tflops,
        written=work["written"],
    )
    ref_rl = roofline(
        work["bytes"],
        work["flops"],
        eager_ms,
        peak_gbps=peak_gbps,
        peak_tflops=peak_tflops,
        written=work["written"],
    )
    ok, why = plausible(rl, ref_rl)
    return (
        ok,
        why,
        {
            **rl.to_dict(),
            "reference": ref_rl.to_dict(),
            "plausible": ok,
            "note": why,
            "peaks": peaks.__dict__ if peaks else None,
        },
    )
