"""Search without an LLM: compiler-seeded candidates, templates and parameter search.

Importing this package stays cheap; torch and triton load only in the modules (and child
processes) that need them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelevo.task import TaskError

IEEE_DOT = "input_precision='ieee'"


def drop_ieee_gemms(candidates: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], str]:
    """Triton GEMM templates computing float32 products in IEEE precision (the task accepts no
    TF32) are dropped when a template keeps the library GEMM instead: without tensor cores a
    Triton GEMM runs on the same FMA pipes as cuBLAS and was 2x slower than it on the H200
    (KernelBench Level 2 GEMM + epilogue tasks), so each would cost a GPU verdict for nothing."""
    names = {name for name, _ in candidates}
    if not names & {"library_epilogue", "library_reduction"}:
        return candidates, ""
    slow = [name for name, source in candidates if IEEE_DOT in source]
    if not slow:
        return candidates, ""
    kept = [(name, source) for name, source in candidates if name not in slow]
    return kept, (
        f"offline templates: {', '.join(slow)} not tried: a float32 Triton GEMM without TF32 is "
        "slower than the library GEMM that library_epilogue keeps"
    )


def propose_offline(
    task_path: str | Path,
    *,
    device: str,
    size: str,
    log: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[tuple[str, str]]:
    """The offline search's seed candidates: matching templates, then the Inductor extraction.

    Each comes back as (origin, source); the verifier judges them like any other candidate.
    Failures to extract are reported through `log` (one line per source that offers nothing,
    saying why: the run's summary carries them), never raised: a seed is a bonus.
    """
    import time
    from concurrent.futures import Future, ThreadPoolExecutor, as_completed

    from kernelevo.offline.inductor import extract_inductor
    from kernelevo.offline.match import instantiate_report

    say = log or (lambda message: None)
    tell = progress or (lambda message: None)
    seeds: list[tuple[str, str]] = []
    t0 = time.monotonic()
    tell(
        "offline: matching templates and extracting Inductor's kernels, side by side "
        f"(Inductor compiles the reference{', slow on a CPU' if device == 'cpu' else ''})..."
    )
    with ThreadPoolExecutor(
        2
    ) as pool:  # two child processes, each paying its own torch import: side by side
        matched = pool.submit(instantiate_report, task_path, check=False)
        extracted = pool.submit(extract_inductor, task_path, device=device, size=size)
        futures: list[Future[Any]] = [matched, extracted]
        for done in as_completed(futures):
            took = f"{time.monotonic() - t0:.0f} s"
            which = "templates" if done is matched else "Inductor extraction"
            try:
                value = done.result()
            except TaskError:  # the task's own fault: no source can do anything with it
                raise
            except Exception as exc:  # one source failing leaves the other's candidates
                first = str(exc).splitlines()[0][:300] if str(exc) else ""
                say(f"offline {which}: {type(exc).__name__}: {first}")
                tell(f"offline {which}: nothing, after {took} (it failed: see the run's notes)")
                continue
            if done is matched:
                candidates, dropped_note = drop_ieee_gemms(list(value.candidates))
                if dropped_note:
                    say(dropped_note)
                for name, source in candidates:
                    seeds.append((f"template:{name}", source))
                names = [name for name, _ in candidates]
                if not names:
                    dropped = "; ".join(f"{name}: {why}" for name, why in value.rejected.items())
                    say(
                        f"offline templates: {value.note or 'no template matches'}"
                        + (f" ({dropped})" if dropped else "")
                    )
                tell(
                    f"offline templates: {len(names)} candidate(s) ({', '.join(names)}) after {took}"
                    if names
                    else f"offline templates: none match, after {took}"
                )
            else:
                if value.source:
                    seeds.append(("inductor", value.source))
                    if value.note:
                        say(f"offline Inductor extraction: {value.note}")
                else:
                    say(f"offline Inductor extraction: {value.reason}")
                tell(
                    f"offline Inductor extraction: {'1 candidate' if value.source else 'nothing,'} "
                    f"after {took}"
                )
    seeds.sort(key=lambda seed: seed[0] == "inductor")  # templates first, as before
    return seeds
