"""When torch.compile is what the user should use: it beats their eager code clearly and no
kernel we found beats it. Pure arithmetic on measured times (no torch), shared by the command
line's summary and the editor's code action.
"""

from __future__ import annotations

from dataclasses import dataclass

CLEARLY_FASTER = 1.5  # torch.compile over eager, to be worth a sentence
TIE = 1.05  # our kernel within this factor of torch.compile counts as a tie


@dataclass
class CompileAdvice:
    compile_over_eager: float
    ours_over_compile: float
    warmup_s: float | None

    def sentence(self) -> str:
        ours = (
            "our best kernel ties it"
            if self.ours_over_compile >= 1 / TIE
            else f"our best kernel is {1 / self.ours_over_compile:.1f}x slower than it"
        )
        warm = (
            f" (its first call compiles: about {self.warmup_s:.0f} s)"
            if self.warmup_s
            else " (its first call compiles)"
        )
        return (
            f"torch.compile makes this {self.compile_over_eager:.1f}x faster than your code; {ours}: "
            f"wrap the target with torch.compile{warm}"
        )


def compile_advice(timings: dict, status: str, phases: dict | None = None) -> CompileAdvice | None:
    """Advice from a best candidate's timings (eager_ms, compile_ms, candidate_ms), or None."""
    eager, comp, ours = (
        timings.get("eager_ms"),
        timings.get("compile_ms"),
        timings.get("candidate_ms"),
    )
    if status == "improved" or not eager or not comp or not ours:
        return None
    over_eager = eager / comp
    ours_over_compile = comp / ours
    if over_eager < CLEARLY_FASTER or ours_over_compile > TIE:
        return None
    warm = (phases or {}).get("compile_baseline_s")
    return CompileAdvice(over_eager, ours_over_compile, float(warm) if warm else None)
