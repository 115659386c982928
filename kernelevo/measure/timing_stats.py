"""What a list of timing samples says: median, spread, and how well the median is known.

Kept apart from the protocol (timing.py) so the statistics can be read and tested alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

_Z95 = 1.959963984540054


@dataclass
class Timing:
    median_ms: float
    p10_ms: float
    p90_ms: float
    mean_ms: float
    stdev_ms: float
    spread: float  # (p90 - p10) / median
    n_samples: int
    graph_ms: float | None = None
    ci_low_ms: float = 0.0  # distribution-free confidence interval of the median
    ci_high_ms: float = 0.0
    rel_ci: float = 0.0  # half-width of that interval over the median
    stop_reason: str = ""  # "converged" | "max_runs" | "max_time"
    l2_flushed: bool = False
    graph_error: str | None = None
    overhead_ms: float = (
        0.0  # median time of an empty call under the same protocol (not subtracted)
    )
    synced_ms: float | None = None  # median with the whole device synchronised before the end event
    escaped_stream: bool = (
        False  # work outlived the stream: the figures above are the device-wide ones
    )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def quantile(sorted_samples: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    n = len(sorted_samples)
    if n == 0:
        raise ValueError("no samples")
    pos = q * (n - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    return sorted_samples[lo] + (sorted_samples[hi] - sorted_samples[lo]) * (pos - lo)


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Order-statistic confidence interval of the median, valid for any distribution.

    The rank of the median among n samples is Binomial(n, 1/2); the normal approximation gives
    ranks n/2 -+ z*sqrt(n)/2. With too few samples the interval is the whole range.
    """
    xs = sorted(samples)
    n = len(xs)
    if n == 0:
        raise ValueError("no samples")
    z = _Z95 if confidence == 0.95 else _z_for(confidence)
    half = z * math.sqrt(n) / 2
    lo = math.floor(n / 2 - half)  # 0-based index of the lower bound
    hi = math.ceil(n / 2 + half) - 1
    if lo < 0 or hi > n - 1:
        return xs[0], xs[-1]
    return xs[lo], xs[hi]


def _z_for(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def relative_ci(samples: Sequence[float], confidence: float = 0.95) -> float:
    lo, hi = median_ci(samples, confidence)
    med = quantile(sorted(samples), 0.5)
    if hi == lo:
        return 0.0
    return (hi - lo) / (2 * med) if med > 0 else math.inf


def summarize(
    samples_ms: Sequence[float],
    *,
    confidence: float = 0.95,
    stop_reason: str = "",
    l2_flushed: bool = False,
    graph_ms: float | None = None,
    graph_error: str | None = None,
) -> Timing:
    xs = sorted(samples_ms)
    n = len(xs)
    med = quantile(xs, 0.5)
    p10, p90 = quantile(xs, 0.10), quantile(xs, 0.90)
    mean = sum(xs) / n
    stdev = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    lo, hi = median_ci(xs, confidence)
    return Timing(
        median_ms=med,
        p10_ms=p10,
        p90_ms=p90,
        mean_ms=mean,
        stdev_ms=stdev,
        spread=(p90 - p10) / med if med > 0 else 0.0,
        n_samples=n,
        graph_ms=graph_ms,
        ci_low_ms=lo,
        ci_high_ms=hi,
        rel_ci=relative_ci(xs, confidence),
        stop_reason=stop_reason,
        l2_flushed=l2_flushed,
        graph_error=graph_error,
    )


@dataclass(frozen=True)
class ShipDecision:
    """Whether a timed kernel is proposed, and how it stands against torch.compile."""

    ship: bool
    versus_compile: str  # "beats" | "matches" | "" (torch.compile not timed)
    why_not: str  # empty when shipped


def _against(speedup: float, cand: dict[str, Any], base: dict[str, Any]) -> str:
    """ "faster", "slower" or "tie": the candidate's median against a baseline's, beyond the noise
    when both 95 % intervals are known (they must not overlap), else by the medians alone."""
    high, low = cand.get("ci_high_ms"), base.get("ci_low_ms")
    c_low, b_high = cand.get("ci_low_ms"), base.get("ci_high_ms")
    if speedup > 1.0:
        return "tie" if high and low and high >= low else "faster"
    if speedup < 1.0:
        return "tie" if c_low and b_high and c_low <= b_high else "slower"
    return "tie"


def _intervals(cand: dict[str, Any], base: dict[str, Any]) -> str:
    return (
        f"{cand.get('ci_low_ms', 0):.4f}-{cand.get('ci_high_ms', 0):.4f} ms vs "
        f"{base.get('ci_low_ms', 0):.4f}-{base.get('ci_high_ms', 0):.4f} ms"
    )


def ship_decision(timings: dict[str, Any]) -> ShipDecision:
    """The ship rule: a verified kernel is proposed when it is faster than eager PyTorch beyond the
    noise (its median's 95 % interval lies below eager's) and not slower than torch.compile beyond
    the noise. It "beats" torch.compile when its interval also lies below torch.compile's, else it
    "matches" it: a standalone kernel as fast as torch.compile, shippable without it."""
    se = timings.get("speedup_eager")
    if se is None:
        return ShipDecision(False, "", "speed not measured")
    detail = timings.get("detail") or {}
    cand = detail.get("candidate") or {}
    eager = detail.get("eager") or {}
    vs_eager = _against(se, cand, eager)
    if vs_eager != "faster":
        why = (
            f"{se:.2f}x vs eager PyTorch is within the timing noise (the 95 % intervals of the "
            f"medians overlap: {_intervals(cand, eager)})"
            if vs_eager == "tie" and se > 1.0
            else f"not faster than eager PyTorch ({se:.2f}x)"
        )
        return ShipDecision(False, "", why)
    sc = timings.get("speedup_compile")
    if sc is None:
        return ShipDecision(True, "", "")
    comp = detail.get("compile") or {}
    vs_compile = _against(sc, cand, comp)
    if vs_compile == "slower":
        known = cand.get("ci_low_ms") and comp.get("ci_high_ms")
        return ShipDecision(
            False,
            "",
            f"slower than torch.compile beyond the timing noise ({sc:.2f}x; {_intervals(cand, comp)})"
            if known
            else f"slower than torch.compile ({sc:.2f}x)",
        )
    return ShipDecision(True, "beats" if vs_compile == "faster" else "matches", "")
