"""A self-contained HTML report of one run: plots as inline SVG, the best kernel's code.

No plotting library: a report must open anywhere, offline, and the plots are simple.
"""

from __future__ import annotations

import html
import time
from typing import Any

GENERATOR = "KernelEvo report"  # marks a file `kernelevo report` may overwrite without --force


def _svg_line(
    points: list[tuple[float, float]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    width: int = 460,
    height: int = 260,
) -> str:
    pad = 46
    if not points:
        return f"<figure><figcaption>{html.escape(title)}</figcaption><p>no measured speedups yet</p></figure>"
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs) or 1
    y0, y1 = 0.0, max(max(ys), 1.0) * 1.1
    sx = lambda x: pad + (x - x0) / ((x1 - x0) or 1) * (width - 2 * pad)  # noqa: E731
    sy = lambda y: height - pad - (y - y0) / ((y1 - y0) or 1) * (height - 2 * pad)  # noqa: E731
    path = " ".join(
        f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for i, (x, y) in enumerate(points)
    )
    one = sy(1.0)
    return (
        f"<figure><figcaption>{html.escape(title)}</figcaption>"
        f'<svg width="{width}" height="{height}" role="img" aria-label="{html.escape(title)}">'
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#888"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#888"/>'
        f'<line x1="{pad}" y1="{one:.1f}" x2="{width - pad}" y2="{one:.1f}" stroke="#ccc" stroke-dasharray="4"/>'
        f'<path d="{path}" fill="none" stroke="#3366cc" stroke-width="2"/>'
        f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle" font-size="12">{html.escape(xlabel)}</text>'
        f'<text x="12" y="{height / 2}" font-size="12" transform="rotate(-90 12 {height / 2})" '
        f'text-anchor="middle">{html.escape(ylabel)}</text>'
        f'<text x="{pad - 4}" y="{one + 4:.1f}" font-size="10" text-anchor="end">1x</text>'
        f'<text x="{pad - 4}" y="{pad + 4}" font-size="10" text-anchor="end">{y1:.2f}x</text></svg></figure>'
    )


def _bars(counts: dict[str, int]) -> str:
    total = sum(counts.values()) or 1
    rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{v}</td><td><div class=bar style='width:{300 * v / total:.0f}px'>"
        f"</div></td></tr>"
        for k, v in sorted(counts.items(), key=lambda kv: -kv[1])
    )
    return f"<table class=mix><tr><th>verdict</th><th>count</th><th></th></tr>{rows}</table>"


def render_report(run: Any, candidates: list[dict[str, Any]], calls: list[dict[str, Any]]) -> str:
    best_so_far, by_iter, by_tokens = 0.0, [], []
    tokens = 0
    call_iter = sorted(calls, key=lambda c: c["id"])
    tokens_at: dict[int, int] = {}
    for c in call_iter:
        tokens += (
            (c["input_tokens"] or 0)
            + (c["output_tokens"] or 0)
            + (c["cache_read_tokens"] or 0)
            + (c["cache_write_tokens"] or 0)
        )
        if c.get("phase_index") is not None:
            tokens_at[c["phase_index"]] = tokens
    counts: dict[str, int] = {}
    for c in sorted(candidates, key=lambda c: c["id"]):
        counts[c["status"]] = counts.get(c["status"], 0) + 1
        if c["status"] == "verified" and c.get("speedup_eager"):
            best_so_far = max(best_so_far, c["speedup_eager"])
        if best_so_far:
            iteration = (
                c["iteration"] if c.get("iteration") is not None else -1
            )  # seeds and tuning: before/after
            by_iter.append((float(iteration), best_so_far))
            by_tokens.append((float(tokens_at.get(iteration, 0)), best_so_far))
    verified = [c for c in candidates if c["status"] == "verified"]
    best = max(verified, key=lambda c: c.get("speedup_eager") or 0) if verified else None
    roof_rows = ""
    for c in sorted(verified, key=lambda c: -(c.get("speedup_eager") or 0))[:8]:
        r = c["verdict"].get("roofline") or {}
        frac = r.get("bw_fraction") if r.get("bound") != "compute" else r.get("flop_fraction")
        roof_rows += (
            f"<tr><td>#{c['id']}</td><td>{html.escape(c['backend'])}</td>"
            f"<td>{_measured(c.get('time_ms'), '{:.4f}')}</td><td>{_measured(c.get('speedup_eager'), '{:.2f}x')}</td>"
            f"<td>{r.get('bound', '-')}</td><td>{f'{100 * frac:.0f}%' if frac else '-'}</td></tr>"
        )
    s = run.summary or {}
    code = html.escape(best["source"]) if best else "no verified candidate"
    head = f'<meta charset="utf-8"><meta name="generator" content="{GENERATOR}">'
    return f"""<!doctype html><html><head>{head}<title>KernelEvo run {html.escape(run.id)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1000px}} figure{{display:inline-block;margin:1em}}
pre{{background:#f6f8fa;padding:1em;overflow:auto}} table{{border-collapse:collapse}}
td,th{{padding:2px 8px;text-align:left}}
.bar{{background:#3366cc;height:10px}}</style></head><body>
<h1>KernelEvo run {html.escape(run.id)}</h1>
<p>Task <code>{html.escape(run.task_path)}</code> · provider {html.escape(str(run.config.get("provider")))}
{html.escape(str(run.config.get("model") or ""))} · backend {html.escape(str(run.config.get("backend")))} ·
device {html.escape(str(run.config.get("device")))} · status {html.escape(run.status)} ·
{time.strftime("%Y-%m-%d %H:%M", time.localtime(run.created_at))}</p>
<p>Result: <b>{html.escape(str(s.get("status", "")))}</b>; best speedup vs eager
{f"{s['speedup_eager']:.2f}x" if s.get("speedup_eager") else "not measured"}, vs torch.compile
{f"{s['speedup_compile']:.2f}x" if s.get("speedup_compile") else "not measured"};
{tokens:,} tokens, ${sum(c["cost_usd"] or 0 for c in calls):.2f};
stopped: {html.escape(str(s.get("stop_reason", "")))}</p>
{_svg_line(by_iter, title="Best speedup vs iterations", xlabel="iteration", ylabel="speedup vs eager")}
{_svg_line(by_tokens, title="Best speedup vs tokens", xlabel="tokens", ylabel="speedup vs eager")}
<h2>Verdict mix</h2>{_bars(counts)}
<h2>Roofline position of the best kernels</h2>
<table><tr><th>candidate</th><th>backend</th><th>ms</th><th>vs eager</th><th>bound</th><th>of peak</th></tr>
{roof_rows}</table>
<h2>Best kernel{f" (#{best['id']})" if best else ""}</h2><pre><code>{code}</code></pre>
</body></html>"""


def _measured(value: float | None, fmt: str) -> str:
    """A number that was measured, or says it was not (a zero would read as a measurement)."""
    return fmt.format(value) if value else "not measured"
