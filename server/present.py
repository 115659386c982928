"""How results read in the editor: lens titles, hover Markdown, progress lines.

Only measured numbers are shown; a field the store does not have is left out, and a
target without a result says so rather than guessing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kernelevo.store import ResultSummary

if TYPE_CHECKING:
    from kernelevo_server.analyzer import TargetInfo
    from kernelevo_server.jobs.manager import Job

_BACKEND_NAMES = {"triton": "Triton", "cuda": "CUDA", "inline": "CUDA", "cuda_inline": "CUDA"}


def backend_name(backend: str) -> str:
    return _BACKEND_NAMES.get(backend.lower(), backend or "GPU")


def gpu_name(gpu: str) -> str:
    name = gpu.strip()
    for prefix in ("NVIDIA ", "GeForce ", "Tesla "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name.split(" ")[0] if name else ""


def target_label(target_id: str) -> str:
    """'function:softmax_rows#2' -> 'softmax_rows': a readable name from a target id alone
    (as the extension's `targetLabel`), for a job started before any analysis is asked."""
    name = target_id.split(":", 1)[-1].split("#", 1)[0].split("@", 1)[0]
    return name or target_id


def offers_kernel(r: ResultSummary | None) -> bool:
    """Show diff / Apply are offered when the engine's outcome says so (kernelevo/outcome.py):
    a faster kernel, or one verified on the CPU (labelled so); never a no-improvement run."""
    return bool(r and r.verified and r.candidate_path and r.run_outcome().applicable)


def result_title(r: ResultSummary) -> str:
    """E.g. '2.31x faster Triton kernel (H200)', or 'Triton kernel verified, speed not measured without a GPU'."""
    outcome = r.run_outcome()
    if not outcome.improved:
        return f"{backend_name(r.backend)} kernel {outcome.headline()}"
    gpu = gpu_name(r.gpu)
    level = ", as fast as torch.compile" if outcome.versus_compile == "matches" else ""
    return (
        f"{r.speedup_eager:.2f}x faster {backend_name(r.backend)} kernel"
        + (f" ({gpu})" if gpu else "")
        + level
    )


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _ms(v: float) -> str:
    return f"{v:.3f} ms" if v < 10 else f"{v:.1f} ms"


def _bandwidth(gbps: float) -> str:
    return f"{gbps / 1000:.2f} TB/s" if gbps >= 1000 else f"{gbps:.0f} GB/s"


def phase_label(phase: str | None, iteration: int) -> str:
    """The search's phase as a person reads it: 'seed', 'tuning', 'iteration 3', 'repair', or
    'starting' before its first progress event."""
    if phase is None:
        return "starting"
    if phase == "iteration" and iteration > 0:
        return f"iteration {iteration}"
    return phase.replace("tune", "tuning")


def progress_message(job: Job) -> str:
    """E.g. 'seed 3 of 7 (template:row_softmax): verified, 1.80x · best 1.80x · 12.3k tokens · $0.12'.
    The search's own message names its phase (kernelevo/search/progress.py); before its first
    progress event the job reads 'starting'."""
    if job.cancelling:
        return "cancelling…"
    if job.state == "queued":
        return job.message or "queued"
    said = job.message if job.message and job.message != "starting search" else ""
    parts = (
        [said]
        if job.phase and said
        else [phase_label(job.phase, job.iteration)] + ([said] if said else [])
    )
    if job.best_speedup is not None:
        parts.append(f"best {job.best_speedup:.2f}x")
    elif job.verified:
        parts.append("verified, speed not measured")
    parts.append(f"{_tokens(int(job.tokens or 0))} tokens")
    parts.append(f"${float(job.cost_usd or 0):.2f}")
    return " · ".join(parts)


def hover_markdown(
    target: TargetInfo,
    r: ResultSummary | None,
    job: Job | None = None,
    applied: bool = False,
    offer: str | None = None,
) -> str:
    """`offer`: the sentence on a lower precision level the user may accept (features/precision)."""
    head = f"**KernelEvo** · `{target.qualname or target.name}`"
    lines: list[str] = []
    if job is not None and job.state in ("queued", "running"):
        lines.append(f"_Optimizing now (job {job.id}): {progress_message(job)}_")
        lines.append("")
    if r is None:
        lines.insert(0, f"{head}: not optimized yet.")
        return "\n".join(lines).rstrip()
    outcome = r.run_outcome()
    if outcome.improved:
        lines.insert(0, f"{head} — {result_title(r)}, verified")
    else:
        lines.insert(0, f"{head} — {outcome.headline()}")
    if applied:
        lines.insert(1, f"_Applied (run `{r.run_id}`); undo the edit to get the original back._")
    if r.library_split:
        lines += ["", f"The kernel {r.library_split}."]
    if offer:
        lines += ["", offer]
    lines.append("")
    rows: list[tuple[str, float, float | None]] = []
    if r.reference_ms is not None:
        rows.append(("PyTorch eager (reference)", r.reference_ms, 1.0))
    if r.compile_ms is not None:
        rows.append(
            (
                "torch.compile",
                r.compile_ms,
                r.reference_ms / r.compile_ms if r.reference_ms and r.compile_ms else None,
            )
        )
    if r.best_ms is not None:
        rows.append((f"best {backend_name(r.backend)} kernel", r.best_ms, r.speedup_eager))
    if rows:
        lines += ["| | time | vs eager |", "|---|---:|---:|"]
        for label, ms, sp in rows:
            lines.append(f"| {label} | {_ms(ms)} | {'' if sp is None else f'{sp:.2f}x'} |")
        lines.append("")
    facts = []
    if r.speedup_compile is not None:
        facts.append(f"{r.speedup_compile:.2f}x vs torch.compile")
    if r.achieved_gbps is not None:
        facts.append(f"achieved {_bandwidth(r.achieved_gbps)}")
    if r.achieved_tflops is not None:
        facts.append(f"achieved {r.achieved_tflops:.1f} TFLOP/s")
    if r.roofline_fraction is not None:
        facts.append(f"{100 * r.roofline_fraction:.0f}% of roofline")
    if facts:
        lines.append(" · ".join(facts))
        lines.append("")
    meta = []
    if r.gpu:
        meta.append(r.gpu)
    if r.created_at:
        meta.append(time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at)))
    meta.append(f"{_tokens(int(r.tokens or 0))} tokens")
    if r.cost_usd:
        meta.append(f"${r.cost_usd:.2f}")
    meta.append(f"run `{r.run_id}`")
    lines.append(" · ".join(meta))
    return "\n".join(lines).rstrip()
