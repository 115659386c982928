"""Timing a verified candidate against eager PyTorch and torch.compile, inside the worker.

The three run interleaved in one process on the same rotating input sets, so drift
hits all alike; the roofline check refuses a time that would beat the measured
memory or compute peak.
"""
from __future__ import annotations

import time
from typing import Any

import torch

from kernelevo.precision import fp32_matmul, task_allows_tf32
from kernelevo.task import import_file, load_task_module
from kernelevo.verify.checks import to_device
from kernelevo.verify.weights import load_weights, weight_plan
from kernelevo.worker.sandbox import TrustedThreads

_COMPILED: dict[str, Any] = {}
N_INPUT_SETS = 8


_INFO: dict[str, Any] = {}


def _device_info(fn: Any, device: torch.device) -> dict[str, Any]:
    """Device facts once per worker (nvidia-smi is a subprocess); clocks are as read at the first timing."""
    key = str(device)
    if key not in _INFO:
        _INFO[key] = fn(device)
    return _INFO[key]


def measure(req: dict[str, Any]) -> dict[str, Any]:
    """Request: task_path, candidate_path, size, seed, compile_mode ('default'|'max-autotune'|None)."""
    from kernelevo import timing
    from kernelevo.baselines import compile_baseline, first_call
    from kernelevo.device_info import device_info
    from kernelevo.device_peaks import get_peaks
    from kernelevo.roofline import compute_peak_tflops, measure_work, plausible, roofline

    phases: dict[str, float] = {}
    tick = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal tick
        now = time.perf_counter()
        phases[name] = round(now - tick, 4)
        tick = now

    device = torch.device("cuda")
    info = _device_info(device_info, device)
    lap("device_info_s")
    task = load_task_module(req["task_path"], req.get("size", "default"))
    cand = import_file(req["candidate_path"], "timed")
    init = list(task.get_init_inputs())
    torch.manual_seed(int(req.get("seed") or 0))
    ref = task.Model(*init).to(device).eval()
    torch.manual_seed(int(req.get("seed") or 0))
    new = cand.ModelNew(*init).to(device).eval()
    plan = weight_plan(ref, new)
    if plan is not None:  # else both come from the same seed, as verification judged them
        load_weights(ref, new, plan)
    sets = []
    for i in range(N_INPUT_SETS):
        torch.manual_seed(int(req.get("seed") or 0) + i)
        with torch.device(device):
            sets.append(to_device(list(task.get_inputs()), device))
    lap("setup_s")
    set_bytes = sum(t.numel() * t.element_size() for t in sets[0] if isinstance(t, torch.Tensor))

    fns: dict[str, Any] = {}
    tf32 = task_allows_tf32(task) or bool(req.get("allow_tf32"))  # the user accepted TF32 (--allow-tf32)
    with torch.no_grad(), fp32_matmul(tf32):
        fns["eager"] = lambda i: ref(*sets[i])
        fns["candidate"] = lambda i: new(*sets[i])
        mode = req.get("compile_mode", "default")
        compile_error = None
        if mode:
            key = f"{req['task_path']}|{req.get('size')}|{mode}"
            compiled = _COMPILED.get(key)
            if compiled is None:
                with TrustedThreads():  # Inductor's compile pool keeps threads for the next compile
                    compiled, compile_error = compile_baseline(ref, mode)
                    if compiled is not None:
                        _, compile_error, _ = first_call(compiled, sets[0])
                    if compile_error is None:
                        _COMPILED[key] = compiled
                    else:
                        compiled = None
            if compiled is not None:
                fns["compile"] = lambda i: compiled(*sets[i])
        lap("compile_baseline_s")
        t0 = time.perf_counter()
        results = timing.time_interleaved(fns, n_input_sets=N_INPUT_SETS, input_set_bytes=set_bytes,
                                          max_time_s=float(req.get("max_time_s", 10.0)), device=device)
        elapsed = time.perf_counter() - t0
        lap("timing_s")
        work = measure_work(ref, sets[0])
        lap("work_count_s")
    peaks = get_peaks(device.index if device.index is not None else 0)
    lap("peaks_s")
    peak_gbps = peaks.copy_gbps if peaks else None
    # A task that accepts TF32 (ALLOW_TF32 = True) is bounded by the tensor cores, not the fp32 pipes.
    peak_tflops = compute_peak_tflops(peaks, "bfloat16" if tf32 and work.dtype == "float32"
                                      else work.dtype)
    cand_ms = results["candidate"].median_ms
    eager_ms = results["eager"].median_ms
    compile_ms = results["compile"].median_ms if "compile" in results else None
    rl = roofline(work.bytes, work.flops, cand_ms, peak_gbps=peak_gbps, peak_tflops=peak_tflops, written=work.written)
    ref_rl = roofline(work.bytes, work.flops, eager_ms, peak_gbps=peak_gbps, peak_tflops=peak_tflops,
                      written=work.written)
    ok, why = plausible(rl, ref_rl)
    timings = {
        "candidate_ms": cand_ms, "eager_ms": eager_ms, "compile_ms": compile_ms,
        "speedup_eager": eager_ms / cand_ms if ok else None,
        "speedup_compile": (compile_ms / cand_ms if compile_ms else None) if ok else None,
        "detail": {k: v.to_dict() for k, v in results.items()}, "compile_mode": mode, "compile_error": compile_error,
        "n_input_sets": N_INPUT_SETS, "measure_s": elapsed, "phases": phases,
        "fp32_matmul": "tf32" if tf32 else "ieee",
    }
    if not ok:
        timings["implausible"] = why
    return {"timings": timings, "roofline": {**rl.to_dict(), "reference": ref_rl.to_dict(), "plausible": ok,
                                             "note": why},
            "device": info, "peaks": peaks.__dict__ if peaks else None}
