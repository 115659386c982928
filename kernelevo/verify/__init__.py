"""Is this candidate a correct replacement for the task's Model? The verifier's public entry point.

Static checks run here (no candidate code executes in this process); the candidate
runs in a fresh process of its own and the judge process decides from its outputs
(kernelevo/judge/). Results are cached in the store by content hash.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kernelevo import __version__
from kernelevo.digest import text_hash
from kernelevo.evaluate import Evaluator
from kernelevo.measure.gpus import default_device
from kernelevo.measure.machine import probe
from kernelevo.task import TaskError, TaskFile, read_task
from kernelevo.text_file import TextFileError, read_text
from kernelevo.verdict import Check, Verdict
from kernelevo.verify.compile_ahead import Precompiled, precompile
from kernelevo.verify.static import check_source
from kernelevo.worker.compile_requests import Aot
from kernelevo.worker.pool import Worker, WorkerError

VERIFIER_VERSION = "1"


def default_size(device: str) -> str:
    return "default" if device == "cuda" else "small"


def resolve_size(task: TaskFile, device: str, size: str | None) -> str:
    """The input size a verification uses: small shapes on CPU where the task defines them."""
    size = size or default_size(device)
    return "default" if size == "small" and not task.hints.get("SMALL") else size


def verdict_key(
    device: str,
    size: str,
    measure: bool = True,
    strict: bool = False,
    precision: tuple[str, ...] = (),
    screen: bool = False,
) -> str:
    """The verdict cache's key besides the task and candidate hashes (the user's policy choices
    included); a screened verdict has a key of its own, so it never answers for a full one."""
    return (
        env_key(device, size)
        + ("|timed" if device == "cuda" and measure else "")
        + ("|strict" if strict else "")
        + "".join(f"|{p}" for p in sorted(precision))
        + ("|screened" if screen else "")
    )


def lookup_keys(device: str, size: str, screen: bool = False, **policy: Any) -> list[str]:
    """The cache keys a verdict request may be answered from, in order: the full verdict's, then
    for a screening its own (a full verdict answers for a screening, never the reverse)."""
    full = verdict_key(device, size, **policy)
    return [full, verdict_key(device, size, screen=True, **policy)] if screen else [full]


def env_key(device: str, size: str) -> str:
    m = probe()
    gpu = m.gpus[0] if (device == "cuda" and m.gpus) else "cpu"
    return (
        f"v{VERIFIER_VERSION}/{__version__}|{device}|{gpu}|{size}|torch {m.torch}|triton {m.triton}"
    )


def verify_candidate(
    task: str | Path | TaskFile,
    candidate: str | Path,
    *,
    evaluator: Evaluator | None = None,
    store: Any = None,
    device: str | None = None,
    size: str | None = None,
    timeout: float | None = None,
    seed: int | None = None,
    use_cache: bool = True,
    measure: bool = True,
    precompiled: Precompiled | None = None,
    strict: bool = False,
    precision: tuple[str, ...] = (),
    compile_mode: str | None = "default",
    max_time_s: float = 10.0,
    screen: bool = False,
) -> Verdict:
    """Verify one candidate file against a task. Raises TaskError for a broken task.

    `precompiled` is the result of compiling ahead (the dispatcher does it before taking a
    GPU); without it the evaluator's compile worker compiles first, then the run worker runs.
    `strict` demands every op in custom kernels (no library GEMM/convolution/attention);
    `precision` lists lower precision levels the user accepts ("tf32", "bf16").
    `screen`: a parameter-search configuration, checked on one input set and timed; a pass is
    `screened`, never `verified` (a full verdict cached for the same content answers instead).
    """
    t0 = time.perf_counter()
    task_file = task if isinstance(task, TaskFile) else read_task(task)
    cand_path = Path(candidate)
    try:
        source = read_text(cand_path, "no such candidate file")
    except TextFileError as exc:
        raise TaskError(str(exc)) from exc
    device = device or default_device()
    size = resolve_size(task_file, device, size)
    cand_hash = text_hash(source)
    strict = strict or bool(task_file.hints.get("STRICT"))
    policy = {"measure": measure, "strict": strict, "precision": precision}
    keys = lookup_keys(device, size, screen, **policy)
    key = keys[-1]  # where this verdict is kept
    if use_cache and store is not None:
        for k in keys:
            cached = store.get_verdict(task_file.hash, cand_hash, k)
            if cached is not None:
                verdict = Verdict.from_dict(cached)
                verdict.cached = True
                return verdict

    static = check_source(source, cand_path.name)
    if static.syntax_error:
        verdict = Verdict("compile_error", static.syntax_error, backend="unknown")
    elif not static.ok:
        verdict = Verdict(
            "rejected", static.problems[0], backend=static.backend, checks=list(static.checks)
        )
    else:
        limit = timeout if timeout is not None else (300.0 if device == "cpu" else 120.0)
        own = evaluator is None
        ev = evaluator or Evaluator(device, warmup="light", compiles=_compilers(static))
        try:
            if own:  # all three start side by side; each request waits only for its own worker
                ev.start_soon()
            probe_s = None
            if precompiled is None:  # a broken or too-large task: TaskError first
                probe_s = _probe(task_file, ev, device, size, limit, seed)
                precompiled = precompile(
                    ev.compiler,
                    task_file.path,
                    cand_path,
                    static.backend,
                    device=device,
                    size=size,
                    seed=seed,
                    timeout=limit,
                )
            ahead = precompiled.check()
            if precompiled.conclusive:
                verdict = Verdict(
                    precompiled.status,
                    precompiled.reason,
                    backend=static.backend,
                    checks=[*static.checks, ahead],
                    log=precompiled.log,
                )
            else:
                verdict = _run_dynamic(
                    task_file,
                    cand_path,
                    static.backend,
                    [*static.checks, ahead],
                    ev,
                    device,
                    size,
                    limit,
                    seed,
                    measure,
                    precompiled.kernels,
                    {
                        "strict": strict,
                        "precision": list(precision),
                        "compile_mode": compile_mode,
                        "max_time_s": max_time_s,
                        "screen": screen,
                    },
                    precompiled.cache,
                    precompiled.launchers,
                )
            verdict.phases = {
                **(_worker_starts(ev) if own else {}),
                "precompile_s": round(precompiled.seconds, 4),
                **({"task_probe_s": probe_s} if probe_s is not None else {}),
                **verdict.phases,
            }
            verdict.isolation = _isolation(ev)
        finally:
            if own:
                ev.close(graceful=False)  # the verdict is in: nothing is left for the workers to do
    verdict.task_hash, verdict.candidate_hash = task_file.hash, cand_hash
    verdict.elapsed_s = time.perf_counter() - t0
    m = probe()
    verdict.versions = {
        "kernelevo": __version__,
        "torch": m.torch,
        "triton": m.triton,
        "nvcc": m.nvcc,
        "nvrtc": m.nvrtc,
        "driver": m.driver,
        **verdict.versions,
    }
    if store is not None and verdict.status not in ("timeout",) and verdict.isolation != "none":
        from kernelevo.store.connection import StoreError

        try:
            store.put_verdict(task_file.hash, cand_hash, key, verdict.to_dict())
        except StoreError as exc:  # the verdict stands; only the cache missed it
            import sys

            print(f"kernelevo: warning: the verdict was not cached: {exc}", file=sys.stderr)
    return verdict


def _worker_starts(ev: Evaluator) -> dict[str, Any]:
    """Each worker's start (seconds, and step by step) and how long the verdict waited for it:
    the workers of a one-shot verify were started for this verdict alone."""
    mine = {"judge": ev.judge, "runner": ev.runner, "compiler": ev.compiler}
    phases = {
        "worker_start_s": {n: w.start_s for n, w in mine.items() if w.start_s is not None},
        "worker_start_parts_s": {n: w.start_parts for n, w in mine.items() if w.start_parts},
        "worker_wait_s": {n: w.waited_s for n, w in mine.items()},
    }
    return {k: v for k, v in phases.items() if v}


def _compilers(static: Any) -> str:
    """The compilers this candidate's compile ahead uses, which a one-verdict compile worker warms up
    before it is ready: Triton's (its first compile), the CUDA ones (nvcc's version, NVRTC), or both."""
    triton = any(
        c.detail.get("triton_kernels") for c in static.checks if c.name == "static.backend"
    )
    cuda = static.backend in ("cuda", "cuda_inline")
    return "all" if triton and cuda else "triton" if triton else "cuda" if cuda else "none"


def _probe(
    task_file: TaskFile, ev: Evaluator, device: str, size: str, limit: float, seed: int | None
) -> float:
    from kernelevo.judge.session import probe_task

    t0 = time.perf_counter()
    probe_task(task_file, ev, device, size, limit, seed)
    return round(time.perf_counter() - t0, 4)


def _isolation(ev: Evaluator) -> str:
    """How the candidate's processes were isolated ('sandbox' or 'none'); an unsandboxed verdict is
    never cached, since that candidate could have reached the store itself."""
    return getattr(ev.runner, "isolation", "sandbox")


def _run_dynamic(
    task_file: TaskFile,
    cand_path: Path,
    backend: str,
    static_checks: list[Check],
    ev: Evaluator,
    device: str,
    size: str,
    timeout: float,
    seed: int | None,
    measure: bool = True,
    compiled_ahead: list[str] | None = None,
    policy: dict[str, Any] | None = None,
    cache: str | None = None,
    launchers: list[dict[str, Any]] | None = None,
) -> Verdict:
    """The judge decides from data; the candidate runs in a fresh process of its own (kernelevo/judge/).
    `cache` and `launchers`: the candidate's own build caches, as its compile ahead left them, and
    the signatures of its Triton kernels."""
    from kernelevo.judge.session import Session

    session = Session(
        task_file,
        cand_path,
        backend,
        ev,
        device,
        size,
        timeout,
        seed,
        policy=policy,
        cache=cache,
        launchers=launchers,
    )
    try:
        verdict, launches = session.run(measure)
    finally:
        turn = getattr(ev, "take_turn", None)
        if turn is not None:
            turn()  # the next verdict goes to the host that sat this one out
    verdict.phases["judge_ops_s"] = session.judge.spent  # seconds per op, round trips included
    verdict.phases["candidate_ops_s"] = session.cand.spent
    verdict.checks = list(static_checks) + verdict.checks
    if device == "cpu" and backend == "triton" and verdict.status in ("verified", "incorrect"):
        missed = {k: v for k, v in launches.items() if k not in (compiled_ahead or [])}
        if missed:  # launched in the interpreter but not reached by the compile-ahead pass
            _aot_check(ev.compiler, cand_path, missed, verdict, timeout)
    return verdict


def _aot_check(
    w: Worker, cand_path: Path, launches: dict[str, Any], verdict: Verdict, timeout: float
) -> None:
    try:
        reply = w.request(
            Aot(candidate_path=str(cand_path.resolve()), launches=launches, arch=90).wire(), timeout
        )
    except WorkerError as exc:
        verdict.checks.append(
            Check("aot_compile_sm90", False, f"ahead-of-time compile did not finish: {exc}")
        )
        verdict.status, verdict.reason = (
            "compile_error",
            f"ahead-of-time compile for sm_90 did not finish: {exc}",
        )
        verdict.worker_lost = exc.lost
        return
    from kernelevo.worker.cache_folders import discard
    from kernelevo.worker.compile_replies import AotCompiled
    from kernelevo.worker.protocol import ProtocolError

    discard(reply.get("cache_folder"))
    try:
        answer = AotCompiled.parse(reply)
    except ProtocolError as exc:
        answer = AotCompiled(error=f"a malformed reply ({exc})")
    records = answer.records
    if answer.error is not None:  # the child raised, ran past its limit or ended unanswered
        records = [{"kernel": "<module>", "ok": False, "error": answer.error[:2000]}]
    failed = [r for r in records if not r.get("ok")]
    verdict.checks.append(
        Check(
            "aot_compile_sm90",
            not failed,
            "compiled for sm_90: " + ", ".join(r["kernel"] for r in records)
            if not failed
            else f"kernel {failed[0]['kernel']} does not compile for sm_90: {failed[0].get('error', '')}",
            {"kernels": records},
        )
    )
    if failed:
        verdict.status = "compile_error"
        verdict.reason = (
            f"kernel {failed[0]['kernel']} does not compile for sm_90 (H100/H200): "
            f"{failed[0].get('error', '')}"
        )
