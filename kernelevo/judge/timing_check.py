"""Timing a verified candidate, with the candidate's own figure cross-checked from the judge's side.

The candidate process times itself (events, L2 flush: kernelevo/measure/timing.py), but it runs
candidate code, so that figure is a claim. The engine then asks it for many calls back
to back on one timing set and measures the wall time of the whole request itself (the rule,
its retries and its allowance for a busy machine: kernelevo/judge/wall_cross_check.py); the
outputs of those calls are checked by the judge; and the claimed time must respect the
compulsory-bytes and compute bound at the measured peaks. The baselines are timed in the
judge process, where no candidate ran; so is the task alone, for `kernelevo bench`'s reference rows.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevo.judge import baseline_store, wall_cross_check
from kernelevo.judge import replies as rp
from kernelevo.judge import requests as rq
from kernelevo.judge.clients import CandidateFailed, JudgeFailed
from kernelevo.judge.input_sets import step_aside
from kernelevo.task import TaskFile
from kernelevo.verdict import Check
from kernelevo.worker import candidate_replies as cp
from kernelevo.worker import candidate_requests as cr

if TYPE_CHECKING:
    from kernelevo.judge.session import Session


def _back_to_back(
    session: Session, args: Any, n: int, to_check: list[tuple[cp.Outputs, str]]
) -> tuple[float, float]:
    """The judge's wall ms per call of n calls back to back (less one empty round trip), whose
    last outputs go to `to_check`; and that round trip in ms. The judge exports one set of output
    buffers at a time, so the outputs an earlier call left there are checked first; the last
    call's are checked once the GPU is shared again."""
    _check_timed_outputs(session, to_check)
    empty = time.perf_counter()
    session.cand.ask(cr.Drop(set="nothing"), "a round trip")
    rtt = time.perf_counter() - empty
    start = time.perf_counter()
    rep = session.cand.ask(
        cr.Repeat(set="time-0", args=args, n=n), "running forward back to back", timeout=600
    )
    wall_ms = max(time.perf_counter() - start - rtt, 0.0) / n * 1e3
    session.delivered(rep, "the timed calls")
    to_check.append((rep, f"the last of {n} back-to-back timed calls"))
    return wall_ms, rtt * 1e3


def _check_timed_outputs(session: Session, to_check: list[tuple[cp.Outputs, str]]) -> None:
    """Each pending output checked and dropped; `to_check` is emptied."""
    while to_check:
        rep, label = to_check.pop(0)
        step_aside(session)  # after the timing, another slot's timing need not wait for this
        checked = session.judge.ask(
            rq.CheckTimedOutput(outputs=rep.outputs, aliased=rep.aliased, label=label)
        )
        session._drop_outputs(rep.outputs)
        session.fail_on([checked])


def _calibration(session: Session) -> wall_cross_check.Calibration:
    p = session.judge.ask(rq.HostProbe(), timeout=120)
    return wall_cross_check.Calibration(float(p.ms_per_launch), float(p.idle_ms_per_launch))


def baseline_key(session: Any) -> str:
    """Baselines are kept per task content, size, GPU model, torch, triton and compile mode."""
    from kernelevo.measure.machine import probe

    m = probe()
    gpu = m.gpus[0] if m.gpus else "gpu"
    tf32 = "|tf32" if getattr(session, "tf32", False) else ""
    return f"{session.task.hash}|{session.size}|{gpu}|torch {m.torch}|triton {m.triton}|{session.compile_mode}{tf32}"


def _alone(
    session: Session, key: str, sets: list[Any]
) -> tuple[dict[str, Any], rp.BaselinesTimed, float, float]:
    own = session.cand.ask(
        cr.Time(sets=sets, max_time_s=session.max_time_s), "timing", timeout=600
    ).timing
    t_cand = time.perf_counter()
    keep = getattr(session.ev.runner, "isolation", "sandbox") != "none"  # a sandboxed candidate
    stored = baseline_store.load(key) if keep else None
    base = session.judge.ask(
        rq.Baselines(
            key=key,
            compile_mode=session.compile_mode,
            max_time_s=session.max_time_s,
            allow_tf32=getattr(session, "tf32", False),
            stored=stored,
        ),
        timeout=900,
    )
    if keep and stored is None and not base.cached:
        baseline_store.save(key, base.wire())
    return own, base, t_cand, time.perf_counter()


def _cross_check(
    session: Session,
    claimed: float,
    sets: list[Any],
    to_check: list[tuple[cp.Outputs, str]],
    alone: bool = False,
) -> wall_cross_check.CrossCheck:
    """The wall-clock cross-check, begun with the GPU shared: other slots' check phases may run
    beside its calls and only make their wall longer (never a forged claim pass), and a waiting
    timing goes between its steps. A retry takes the GPU alone, so that contention never decides
    a rejection. `alone`: called inside the timing's stretch, where the GPU is this verdict's
    already (kernelevo/gpu_gate.py, SharedFirstAttempts)."""
    hold, took_alone = session.hold, False

    def retry_alone() -> None:
        nonlocal took_alone
        if hold is not None and not took_alone and not alone:
            _check_timed_outputs(session, to_check)
            hold.time_alone()
            took_alone = True

    try:
        cross = wall_cross_check.cross_check(
            claimed,
            lambda n: _back_to_back(session, sets[0], n, to_check),
            lambda: _calibration(session),
            retry_alone,
        )
    finally:
        if took_alone and hold is not None:
            hold.timing_done()
    if hold is not None and not alone:
        hold.gate.first_attempts.record(len(cross.attempts) > 1)
    return cross


def timed(session: Session) -> tuple[dict[str, Any], dict[str, Any]]:
    """Only what needs the GPU alone runs while this verdict holds its gate exclusive (the
    candidate's timing and the baselines); the timing sets are drawn before, the wall-clock
    cross-check (alone only on a retry), its outputs' checks and the bound come after, while
    other slots' check phases run (kernelevo/gpu_gate.py). Where shared first attempts on this
    GPU lately needed the retry anyway, the cross-check joins the timing's stretch."""
    key = baseline_key(session)
    t0 = time.perf_counter()
    sets = session.judge.ask(rq.TimingSets(seed=session.base), timeout=600).sets
    to_check: list[tuple[cp.Outputs, str]] = []
    # a screened configuration's time only ranks it for a full verdict, which cross-checks it:
    # a forged claim costs that verdict, never a proposal
    hold, cross = session.hold, None
    first_alone = hold is not None and not session.screen and hold.gate.first_attempts.alone_first()
    if hold is not None:
        hold.time_alone()
    t_alone = time.perf_counter()
    try:
        own, base, t_cand, t_base = _alone(session, key, sets)
        claimed = float(own["median_ms"])
        if first_alone:
            cross = _cross_check(session, claimed, sets, to_check, alone=True)
    finally:
        if hold is not None:
            hold.timing_done()
    alone_s = time.perf_counter() - t_alone
    if not session.screen and cross is None:
        cross = _cross_check(session, claimed, sets, to_check)
    _check_timed_outputs(session, to_check)
    if cross is not None and not cross.passed:
        why = cross.rejection()
        session.checks.append(Check("timing_cross_check", False, why, cross.detail()))
        raise CandidateFailed("rejected", why)
    if cross is not None:
        session.checks.append(Check("timing_cross_check", True, cross.summary(), cross.detail()))
    eager, comp = base.eager, base.compile
    eager_ms, compile_ms = float(eager["median_ms"]), (float(comp["median_ms"]) if comp else None)
    step_aside(session)
    b = session.judge.ask(rq.Bound(key=key, candidate_ms=claimed))
    ok = b.plausible
    session.checks.append(Check("roofline_plausible", ok, b.note or "within measured peaks"))
    if not ok:
        raise CandidateFailed("rejected", b.note)
    timings = {
        "candidate_ms": claimed,
        "eager_ms": eager_ms,
        "compile_ms": compile_ms,
        "speedup_eager": eager_ms / claimed,
        "speedup_compile": compile_ms / claimed if compile_ms else None,
        "detail": {"candidate": own, "eager": eager, **({"compile": comp} if comp else {})},
        "compile_mode": base.compile_mode,
        "compile_error": base.compile_error,
        "n_input_sets": len(sets),
        "measure_s": round(time.perf_counter() - t0, 4),
        "phases": {
            **{f"first_{k}": v for k, v in base.phases.items()},
            "candidate_timing_s": round(t_cand - t0, 4),
            "baselines_s": round(t_base - t_cand, 4),
            "alone_s": round(alone_s, 4),
            "baselines_cached": base.cached,
            "baselines_stored": base.stored,
        },
        "fp32_matmul": "tf32" if base.tf32 else "ieee",
        "cross_check": (
            {**cross.detail(), "first_attempt": "alone" if first_alone else "shared"}
            if cross is not None
            else {"skipped": "screened"}
        ),
    }
    se, sc = timings["speedup_eager"], timings["speedup_compile"]
    session.timing_note = f"; {claimed:.4f} ms, {se:.2f}x vs eager" + (
        f", {sc:.2f}x vs torch.compile" if sc else ""
    )
    session.device_info = base.device
    return timings, b.roofline


def measure_reference(
    task: TaskFile,
    ev: Any,
    size: str,
    seed: int | None,
    compile_mode: str | None,
    max_time_s: float,
    timeout: float,
) -> dict[str, Any]:
    """Eager and torch.compile of the task alone, timed by the judge (no candidate): `kernelevo bench`'s
    reference rows. Returns {"timings", "roofline", "device"} or {"error"}."""
    from kernelevo.judge.exchange import exchange_folder
    from kernelevo.judge.session import Session

    session = Session(
        task,
        Path(task.path),
        "reference",
        ev,
        "cuda",
        size,
        timeout,
        seed,
        compile_mode,
        max_time_s,
    )
    session.folder = exchange_folder(ev)
    j = session.judge
    try:
        j.ask(rq.Probe(**session.common(), seed=session.base))
        j.ask(
            rq.Begin(
                **session.common(), seed=session.base, exchange=session.folder, via=session.via
            )
        )
        j.ask(rq.TimingSets(seed=session.base), timeout=600)
        key = baseline_key(session)
        base = j.ask(
            rq.Baselines(key=key, compile_mode=compile_mode, max_time_s=max_time_s), timeout=900
        )
        b = j.ask(rq.Bound(key=key, candidate_ms=float(base.eager["median_ms"])))
    except JudgeFailed as exc:
        return {"error": str(exc)}
    finally:
        with contextlib.suppress(JudgeFailed):
            j.ask(rq.End(), timeout=60)
        shutil.rmtree(session.folder, ignore_errors=True)
    comp = base.compile
    timings = {
        "eager_ms": base.eager["median_ms"],
        "compile_ms": comp["median_ms"] if comp else None,
        "detail": {"eager": base.eager, **({"compile": comp} if comp else {})},
        "compile_error": base.compile_error,
        "compile_mode": compile_mode,
    }
    return {"timings": timings, "roofline": b.roofline, "device": base.device}
