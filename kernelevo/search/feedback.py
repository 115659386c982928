"""Turning a verdict into what a model can act on, for every way a candidate can fail: where the
output first went wrong and by how much (incorrect), the rule broken and the library ops seen
(rejected), the time limit (timeout), the trimmed compiler or runtime error, and the numbers
(timings, roofline) of a verified one. `one_line` is the same in one line, for attempt histories."""

from __future__ import annotations

import re
from typing import Any

from kernelevo.verdict import Verdict

MAX_ERROR_LINES = 25
_NUMS = (
    "first_index",
    "expected",
    "got",
    "max_abs_err",
    "max_err_index",
    "rel_l2",
    "mismatches",
    "numel",
    "nonfinite",
    "expected_at_max",
)
_HINTS = {
    "incorrect": "Compare the index above with your indexing, masks, strides, reduction order and accumulator "
    "dtype; an error at the first or last block often means an off-by-one or a missing mask.",
    "rejected": "Keep the computation in your own kernels and follow the rule named above.",
    "timeout": "Look for a loop that never ends (a bound that is not advanced), a grid far larger than the data, "
    "or a kernel recompiled on every call.",
    "runtime_error": "Check launch arguments (grid, pointers, dtypes, contiguity) and out-of-bounds accesses.",
}


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
    picked = [lines[i] for i in sorted(keep)][:max_lines]
    return "\n".join(picked)


def _num(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def mismatch(detail: dict[str, Any]) -> str:
    """'first wrong at [3, 17]: expected 0.25, got 0; 12 of 4096 outside the tolerance; ...'"""
    parts = []
    if detail.get("first_index") is not None:
        where = f"first wrong element at {detail['first_index']}"
        if "expected" in detail:
            where += f": expected {_num(detail['expected'])}, got {_num(detail['got'])}"
        parts.append(where)
    if detail.get("mismatches") is not None and detail.get("numel"):
        parts.append(f"{detail['mismatches']} of {detail['numel']} elements outside the tolerance")
    if detail.get("max_abs_err") is not None:
        part = f"max abs error {_num(detail['max_abs_err'])} at {detail.get('max_err_index')}"
        if "expected_at_max" in detail:
            part += (
                f" (expected {_num(detail['expected_at_max'])}, got {_num(detail['got_at_max'])})"
            )
        parts.append(part)
    if detail.get("rel_l2") is not None:
        parts.append(f"relative L2 error {_num(detail['rel_l2'])}")
    tol = detail.get("tolerance")
    if isinstance(tol, dict):
        parts.append("tolerance " + ", ".join(f"{k}={_num(v)}" for k, v in tol.items()))
    return "; ".join(parts)


def describe(verdict: Verdict, headline: bool = True) -> str:
    """A compact, model-facing account of a verdict; without `headline` it leaves out the status
    and reason (a repair request states them already: the model reads them once)."""
    status = verdict.status
    first = f"status: {status}: {verdict.reason}"
    out = [first] if headline else []
    for c in verdict.failed_checks()[:3]:
        detail = c.detail or {}
        message = c.message
        line = f"- failed check {c.name}" + (
            f": {message}" if message and message not in first else ""
        )
        if status == "incorrect" and any(k in detail for k in _NUMS):
            line += f"\n  {mismatch(detail)}"
        elif detail.get("banned"):
            line += f"\n  reference ops you called: {', '.join(detail['banned'])}"
        out.append(line)
    if verdict.log and status in ("compile_error", "runtime_error", "timeout"):
        out.append("error output:\n" + trim_error(verdict.log))
    if verdict.library_ops:
        out.append(f"library ops your code dispatched: {', '.join(verdict.library_ops)}")
    t = verdict.timings or {}
    if t.get("candidate_ms") is not None:
        line = f"timing: your kernel {t['candidate_ms']:.4f} ms"
        if t.get("eager_ms"):
            line += (
                f", eager PyTorch {t['eager_ms']:.4f} ms ({t['eager_ms'] / t['candidate_ms']:.2f}x)"
            )
        if t.get("compile_ms"):
            line += f", torch.compile {t['compile_ms']:.4f} ms ({t['compile_ms'] / t['candidate_ms']:.2f}x)"
        out.append(line)
    r = verdict.roofline or {}
    if r.get("bw_fraction") is not None:
        out.append(
            f"roofline: {r.get('achieved_gbps', 0):.0f} GB/s = {100 * r['bw_fraction']:.0f}% of measured peak "
            f"bandwidth"
            + (
                f", {100 * r['flop_fraction']:.0f}% of peak FLOP rate"
                if r.get("flop_fraction")
                else ""
            )
        )
    if status == "verified" and not t:
        out.append("speed not measured on this machine (no GPU): only correctness is known")
    if status in _HINTS:
        out.append(_HINTS[status])
    return "\n".join(out)


def one_line(verdict: Verdict, speedup: float | None = None) -> str:
    """The verdict in one line: what a later attempt must not repeat, or what it achieved."""
    status = verdict.status
    if status == "verified":
        return "verified" + (f", {speedup:.2f}x vs eager" if speedup else ", speed not measured")
    failed = verdict.failed_checks()
    reason = verdict.reason
    text = f"{status}: {reason}"
    if failed:
        c = failed[0]
        detail = c.detail or {}
        if status == "incorrect" and any(k in detail for k in _NUMS):
            text = f"{status}: {mismatch(detail)}"
        elif c.message and c.message not in reason:
            text += f" ({c.name}: {c.message})"
    elif status == "compile_error" and verdict.log:
        last = [ln for ln in trim_error(verdict.log, 6).splitlines() if "rror" in ln]
        text += f" ({last[-1].strip()[:200]})" if last else ""
    return text[:600]


def summary(verdict: Verdict, speedup: float | None) -> str:
    s = verdict.status
    return f"{s}, {speedup:.2f}x vs eager" if speedup else s
