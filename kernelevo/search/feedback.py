"""Turning a verdict into what a model can act on: the failing check, trimmed errors, numbers."""
from __future__ import annotations

import re
from typing import Any

MAX_ERROR_LINES = 25


def trim_error(text: str, max_lines: int = MAX_ERROR_LINES) -> str:
    """Keep the lines that say what went wrong (errors, the failing source line), drop the noise."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    if len(lines) <= max_lines:
        return "\n".join(lines)
    key = [i for i, ln in enumerate(lines) if re.search(r"error|Error|\^|line \d+|:\d+:", ln)]
    keep: set[int] = set()
    for i in key[:8]:
        keep.update(range(max(0, i - 2), min(len(lines), i + 3)))
    keep.update(range(len(lines) - 4, len(lines)))
    picked = [lines[i] for i in sorted(keep)][: max_lines]
    return "\n".join(picked)


def describe(verdict: dict[str, Any]) -> str:
    """A compact, model-facing account of a verdict."""
    status = verdict.get("status", "?")
    out = [f"status: {status}: {verdict.get('reason', '')}"]
    failed = [c for c in verdict.get("checks", []) if not c.get("passed")]
    for c in failed[:3]:
        detail = c.get("detail") or {}
        nums = {k: detail[k] for k in ("max_abs_err", "max_err_index", "rel_l2", "mismatches", "numel", "first_index")
                if k in detail}
        out.append(f"- failed check {c['name']}: {c.get('message', '')}" + (f" {nums}" if nums else ""))
    if verdict.get("log") and status in ("compile_error", "runtime_error"):
        out.append("error output:\n" + trim_error(verdict["log"]))
    if verdict.get("library_ops"):
        out.append(f"library ops your code dispatched: {', '.join(verdict['library_ops'])}")
    t = verdict.get("timings") or {}
    if t.get("candidate_ms") is not None:
        line = f"timing: your kernel {t['candidate_ms']:.4f} ms"
        if t.get("eager_ms"):
            line += f", eager PyTorch {t['eager_ms']:.4f} ms ({t['eager_ms'] / t['candidate_ms']:.2f}x)"
        if t.get("compile_ms"):
            line += f", torch.compile {t['compile_ms']:.4f} ms ({t['compile_ms'] / t['candidate_ms']:.2f}x)"
        out.append(line)
    r = verdict.get("roofline") or {}
    if r.get("bw_fraction") is not None:
        out.append(f"roofline: {r.get('achieved_gbps', 0):.0f} GB/s = {100 * r['bw_fraction']:.0f}% of measured peak "
                   f"bandwidth" + (f", {100 * r['flop_fraction']:.0f}% of peak FLOP rate" if r.get("flop_fraction") else ""))
    if status == "verified" and not t:
        out.append("speed not measured on this machine (no GPU): only correctness is known")
    return "\n".join(out)


def summary(verdict: dict[str, Any], speedup: float | None) -> str:
    s = verdict.get("status", "?")
    return f"{s}, {speedup:.2f}x vs eager" if speedup else s
