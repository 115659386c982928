"""Building prompts from the versioned template files in prompts/<version>/.

The system part (rules, the backend's format, the precision/toolchain/policy contract) and the
task part (reference, the measured hardware and target block) never change within a run once
the baselines are measured, so they form the cached prefix; only the last message varies.
Improvements and repairs ask for SEARCH/REPLACE edits of the file shown (whole files still
accepted); a repair is one new message quoting the failed file once, not the conversation so far.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from string import Template
from typing import Any

from kernelevo.llm import Message, Prompt, SystemPart
from kernelevo.search.feedback import describe, one_line, summary
from kernelevo.search.population import Program, Style
from kernelevo.search.target import TargetFacts
from kernelevo.verdict import Verdict

PROMPT_VERSION = "v2"
BACKEND_NAMES = {"triton": "Triton", "cuda": "CUDA C++"}
BACKEND_RULES = {
    "triton": "@triton.jit kernels launched from forward",
    "cuda": "CUDA C++ compiled with kernelevo.cuda.compile and launched from forward",
}
LIBRARY_POLICY = (
    "by default a candidate may call cuBLAS/cuDNN GEMM, convolution and attention ops (torch.matmul, "
    "F.conv2d, scaled_dot_product_attention) as long as its own kernels do real work of the "
    "reference (fusing the rest, not only launching a trivial kernel); calling the reference's other "
    "ops to compute the result is rejected."
)
MAX_HISTORY = 6


def template(name: str, version: str = PROMPT_VERSION) -> Template:
    text = (
        resources.files("kernelevo.search").joinpath("prompts", version, f"{name}.md").read_text()
    )
    return Template(text)


@dataclass
class TaskContext:
    task_name: str
    reference: str
    hardware: str
    baselines: str = ""
    tolerance_note: str = ""
    triton_version: str = ""
    tolerance: dict[str, Any] = field(default_factory=dict)  # the task's TOLERANCE hint
    allow_tf32: bool = False
    allowed_ops: list[str] = field(default_factory=list)


def tolerances_text(hint: dict[str, Any] | None = None) -> str:
    from kernelevo.checks.tolerance import float_tolerance

    parts = []
    for name in ("float32", "float16", "bfloat16"):
        tol = float_tolerance(name, hint)
        parts.append(
            f"{name} atol={tol['atol']:g}, rtol={tol['rtol']:g}, relative L2 <= {tol['rel_l2']:g}"
        )
    return "; ".join(parts) + " (integer and bool outputs must match exactly)"


class PromptBuilder:
    def __init__(self, ctx: TaskContext, version: str = PROMPT_VERSION) -> None:
        self.ctx, self.version = ctx, version
        self.facts = TargetFacts()

    def learn(self, verdict: Verdict) -> bool:
        """Take the hardware and baselines from the first timed verdict; True when they changed
        (the cached prefix changes once, then stays)."""
        if self.facts.measured or not (verdict.timings or {}).get("eager_ms"):
            return False
        self.facts = TargetFacts.from_verdict(verdict)
        return True

    def _system(self, backend: str) -> tuple[SystemPart, ...]:
        ctx = self.ctx
        rules = template("system", self.version).substitute(backend_rule=BACKEND_RULES[backend])
        fmt = template(f"format_{backend}", self.version).substitute(
            triton_version=ctx.triton_version or "3.x"
        )
        tf32 = (
            "This task accepts TF32 (its baselines run with TF32 too)."
            if ctx.allow_tf32
            else "This task does not accept TF32: keep fp32 products exact."
        )
        allowed = (
            f" This task also allows: {', '.join(ctx.allowed_ops)}." if ctx.allowed_ops else ""
        )
        contract = template("contract", self.version).substitute(
            tolerances=tolerances_text(ctx.tolerance),
            tolerance_note=ctx.tolerance_note,
            tf32_policy=tf32,
            library_policy=LIBRARY_POLICY + allowed,
            triton_version=ctx.triton_version or "3.x",
        )
        hardware = self.facts.render(ctx.hardware, ctx.baselines)
        task = template("task", self.version).substitute(
            task_name=ctx.task_name, reference=ctx.reference.strip(), target=hardware
        )
        return (
            SystemPart(rules + "\n" + fmt + "\n" + contract, cache=True),
            SystemPart(task, cache=True),
        )

    def _inspirations(self, programs: list[Program]) -> str:
        t = template("inspiration", self.version)
        return "\n".join(
            t.substitute(id=p.id, summary=summary(p.verdict, p.speedup), source=p.source.strip())
            for p in programs
        )

    def _history(self, attempts: Sequence[Program]) -> str:
        if not attempts:
            return ""
        lines = [
            f"- #{p.id} ({p.origin}): {one_line(p.verdict, p.speedup)}"
            for p in attempts[-MAX_HISTORY:]
        ]
        return template("history", self.version).substitute(attempts="\n".join(lines)) + "\n"

    def fresh(
        self, backend: str, inspirations: list[Program], attempts: Sequence[Program] = ()
    ) -> Prompt:
        body = template("fresh", self.version).substitute(
            style_intro=template("style_fresh", self.version).template.strip(),
            history=self._history(attempts),
            inspirations=self._inspirations(inspirations),
            backend_name=BACKEND_NAMES[backend],
        )
        return Prompt(system=self._system(backend), messages=(Message("user", body),))

    def improve(
        self,
        backend: str,
        parent: Program,
        inspirations: list[Program],
        attempts: Sequence[Program] = (),
        style: Style = "exploit",
    ) -> Prompt:
        body = template("improve", self.version).substitute(
            style_intro=template(f"style_{style}", self.version).template.strip(),
            parent_id=parent.id,
            parent_summary=summary(parent.verdict, parent.speedup),
            parent_source=parent.source.strip(),
            feedback=describe(parent.verdict),
            history=self._history(attempts),
            inspirations=self._inspirations(inspirations),
            edit_rule=template("diff_rule", self.version).template.strip(),
        )
        return Prompt(system=self._system(backend), messages=(Message("user", body),))

    def repair(
        self, backend: str, source: str, verdict: Verdict, attempts: Sequence[Program] = ()
    ) -> Prompt:
        """One message: what failed (once), the earlier attempts (not the one repaired, shown in
        full), the failed file once."""
        edit = (
            template("diff_rule", self.version).template.strip()
            if source.strip()
            else "Answer with the whole corrected file in one ```python block."
        )
        found = describe(verdict, headline=False)
        body = template("repair", self.version).substitute(
            status=verdict.status,
            reason=verdict.reason,
            feedback=f"\nWhat the harness found:\n{found}\n" if found else "",
            history=self._history([a for a in attempts if a.source != source]),
            edit_rule=edit,
            source=source.strip(),
        )
        return Prompt(system=self._system(backend), messages=(Message("user", body),))


def allows_tf32(reference: str) -> bool:
    """The task file's own `ALLOW_TF32 = True`."""
    return bool(re.search(r"^ALLOW_TF32\s*=\s*True\b", reference, re.MULTILINE))
