"""Search without an LLM: compiler-seeded candidates, templates and parameter search.

Importing this package stays cheap; torch and triton load only in the modules (and child
processes) that need them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


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
    from concurrent.futures import ThreadPoolExecutor, as_completed

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
        for done in as_completed([matched, extracted]):
            took = f"{time.monotonic() - t0:.0f} s"
            if done is matched:
                names = [name for name, _ in done.result().candidates]
                tell(
                    f"offline templates: {len(names)} candidate(s) ({', '.join(names)}) after {took}"
                    if names
                    else f"offline templates: none match, after {took}"
                )
            else:
                found = bool(done.result().source)
                tell(
                    f"offline Inductor extraction: {'1 candidate' if found else 'nothing'} after {took}"
                )
        report, result = matched.result(), extracted.result()
    for name, source in report.candidates:
        seeds.append((f"template:{name}", source))
    if not report.candidates:
        dropped = "; ".join(f"{name}: {why}" for name, why in report.rejected.items())
        say(
            f"offline templates: {report.note or 'no template matches'}"
            + (f" ({dropped})" if dropped else "")
        )
    if result.source:
        seeds.append(("inductor", result.source))
    else:
        say(f"offline Inductor extraction: {result.reason}")
    return seeds
