"""Building prompts from the versioned template files in prompts/<version>/.

The system part and the task part (reference, hardware, baselines) never change
within a run, so they form the cached prefix; only the last message varies.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from string import Template
from typing import Any

from kernelevo.llm import Message, Prompt, SystemPart
from kernelevo.search.feedback import describe, summary
from kernelevo.search.population import Program

PROMPT_VERSION = "v1"
BACKEND_NAMES = {"triton": "Triton", "cuda": "CUDA C++"}
BACKEND_RULES = {
    "triton": "@triton.jit kernels launched from forward",
    "cuda": "CUDA C++ compiled with kernelevo.cuda.compile and launched from forward",
}


def template(name: str, version: str = PROMPT_VERSION) -> Template:
    text = resources.files("kernelevo.search").joinpath("prompts", version, f"{name}.md").read_text()
    return Template(text)


@dataclass
class TaskContext:
    task_name: str
    reference: str
    hardware: str
    baselines: str
    tolerance_note: str = ""
    triton_version: str = ""


class PromptBuilder:
    def __init__(self, ctx: TaskContext, version: str = PROMPT_VERSION) -> None:
        self.ctx, self.version = ctx, version

    def _system(self, backend: str) -> tuple[SystemPart, ...]:
        rules = template("system", self.version).substitute(backend_rule=BACKEND_RULES[backend])
        fmt = template(f"format_{backend}", self.version).substitute(triton_version=self.ctx.triton_version or "3.x")
        task = template("task", self.version).substitute(
            task_name=self.ctx.task_name, reference=self.ctx.reference.strip(), hardware=self.ctx.hardware,
            baselines=self.ctx.baselines, tolerance_note=self.ctx.tolerance_note)
        return (SystemPart(rules + "\n" + fmt, cache=True), SystemPart(task, cache=True))

    def _inspirations(self, programs: list[Program]) -> str:
        t = template("inspiration", self.version)
        return "\n".join(t.substitute(id=p.id, summary=summary(p.verdict, p.speedup), source=p.source.strip())
                         for p in programs)

    def fresh(self, backend: str, inspirations: list[Program]) -> Prompt:
        body = template("fresh", self.version).substitute(backend_name=BACKEND_NAMES[backend],
                                                          inspirations=self._inspirations(inspirations))
        return Prompt(system=self._system(backend), messages=(Message("user", body),))

    def improve(self, backend: str, parent: Program, inspirations: list[Program]) -> Prompt:
        body = template("improve", self.version).substitute(
            parent_id=parent.id, parent_summary=summary(parent.verdict, parent.speedup),
            parent_source=parent.source.strip(), feedback=describe(parent.verdict),
            inspirations=self._inspirations(inspirations), backend_name=BACKEND_NAMES[backend])
        return Prompt(system=self._system(backend), messages=(Message("user", body),))

    def repair(self, backend: str, previous: Prompt, answer: str, source: str, verdict: dict[str, Any]) -> Prompt:
        body = template("repair", self.version).substitute(
            status=verdict.get("status", "failed"), reason=verdict.get("reason", ""), source=source.strip(),
            feedback=describe(verdict))
        return Prompt(system=previous.system,
                      messages=previous.messages + (Message("assistant", answer), Message("user", body)))
