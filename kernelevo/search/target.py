"""What the model must beat and on what: the GPU's measured facts, both baselines, the acceptance
rule, the task's compulsory traffic and the time it takes at the measured bandwidth, and whether
the task is memory- or compute-bound. Everything comes from a verdict KernelEvo measured; the
block is part of the cached prompt prefix, so it is built once per run (when the first timed
verdict arrives) and not rebuilt for every proposal."""

from __future__ import annotations

from dataclasses import dataclass

from kernelevo.verdict import Verdict

ACCEPTANCE = (
    "A kernel counts as an improvement only when its median time's 95 % interval lies below both "
    "eager PyTorch's and torch.compile's (faster than both beyond the timing noise), with cold L2 "
    "caches; correctness is checked first on several input sets, including sizes other than the "
    "benchmark's."
)


@dataclass(frozen=True)
class TargetFacts:
    gpu: str = ""
    sm_count: int | None = None
    l2_mb: float | None = None
    compute_capability: str = ""
    peak_gbps: float | None = None
    peak_tflops: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    io_bytes: int | None = None
    flops: int | None = None
    bound: str = ""

    @property
    def measured(self) -> bool:
        return self.eager_ms is not None

    @classmethod
    def from_verdict(cls, verdict: Verdict) -> TargetFacts:
        d = verdict.device or {}
        t = verdict.timings or {}
        r = verdict.roofline or {}
        l2 = d.get("l2_bytes")
        return cls(
            gpu=str(d.get("name") or d.get("gpu_name") or ""),
            sm_count=d.get("sm_count"),
            l2_mb=l2 / 2**20 if l2 else None,
            compute_capability=str(d.get("compute_capability") or ""),
            peak_gbps=r.get("peak_gbps"),
            peak_tflops=r.get("peak_tflops"),
            eager_ms=t.get("eager_ms"),
            compile_ms=t.get("compile_ms"),
            io_bytes=r.get("bytes"),
            flops=r.get("flops"),
            bound=str(r.get("bound") or ""),
        )

    def floor_ms(self) -> tuple[float | None, float | None]:
        """(time to move the compulsory bytes, time for the FLOPs) at the measured peaks."""
        mem = (
            self.io_bytes / (self.peak_gbps * 1e9) * 1e3
            if self.io_bytes and self.peak_gbps
            else None
        )
        flop = (
            self.flops / (self.peak_tflops * 1e12) * 1e3
            if self.flops and self.peak_tflops
            else None
        )
        return mem, flop

    def render(self, hardware: str, unmeasured: str = "") -> str:
        """The block as the model reads it (`unmeasured`: what to say of baselines not yet timed)."""
        if not self.measured:
            return (
                f"Target hardware: {hardware}\n"
                f"Baselines: {unmeasured or 'not measured yet'}. " + ACCEPTANCE
            )
        lines = [
            f"Target hardware: {self.gpu or hardware}"
            + (f" (compute capability {self.compute_capability}" if self.compute_capability else "")
            + (f", {self.sm_count} SMs" if self.sm_count else "")
            + (f", {self.l2_mb:.0f} MB L2" if self.l2_mb else "")
            + (")" if self.compute_capability else "")
        ]
        peaks = [
            f"{self.peak_gbps:.0f} GB/s memory bandwidth" if self.peak_gbps else "",
            f"{self.peak_tflops:.0f} TFLOP/s dense matrix rate for this task's dtype"
            if self.peak_tflops
            else "",
        ]
        if any(peaks):
            lines.append("Measured peaks: " + ", ".join(p for p in peaks if p) + ".")
        base = f"Baselines to beat: eager PyTorch {self.eager_ms:.4f} ms"
        base += f", torch.compile {self.compile_ms:.4f} ms." if self.compile_ms else "."
        lines.append(base)
        lines.append(ACCEPTANCE)
        mem, flop = self.floor_ms()
        if mem is not None and self.io_bytes:  # mem is only known with the bytes
            lines.append(
                f"Compulsory traffic: {self.io_bytes / 1e6:.2f} MB (each input read once, each output written "
                f"once) takes {mem * 1e3:.1f} us at the measured bandwidth"
                + (
                    f"; the counted FLOPs ({self.flops / 1e9:.2f} GFLOP) take {flop * 1e3:.1f} us at the "
                    f"measured peak"
                    if flop and self.flops
                    else ""
                )
                + "."
            )
        if self.bound:
            best = min(x for x in (self.eager_ms, self.compile_ms) if x)
            floor = max(x for x in (mem, flop) if x is not None) if (mem or flop) else None
            lines.append(
                f"The task is {self.bound}-bound"
                + (
                    f"; the fastest baseline is {best / floor:.1f}x above that floor"
                    if floor
                    else ""
                )
                + ("; a time far below it is a measurement bug, not a win." if floor else ".")
            )
            if floor and floor * 1e3 < 10:
                lines.append(
                    "At these microsecond times launch overhead dominates: one fused kernel, few "
                    "launches, no host synchronisation, no per-call allocations beyond the output."
                )
        return "\n".join(lines)
