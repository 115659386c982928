"""The engine's handle on its worker processes: one runs candidates, one compiles them.

Keeping both alive across candidates is what makes evaluation fast (no torch import
per candidate); on a GPU machine the compile worker is what lets compiles proceed
while the GPU is busy.
"""
from __future__ import annotations

from kernelevo.worker.pool import Worker


class Evaluator:
    def __init__(self, device: str) -> None:
        self.device = device
        self.runner = Worker(device)
        self.compiler = Worker("compile")

    def close(self) -> None:
        self.runner.close()
        self.compiler.close()

    def __enter__(self) -> "Evaluator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
