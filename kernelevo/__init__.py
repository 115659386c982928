"""KernelEvo: propose, verify, benchmark and evolve GPU kernels for PyTorch code.

Importing this package stays cheap (no torch): the language server and the CLI's
fast commands depend on that.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__version__ = "0.1.0"

F = TypeVar("F", bound=Callable[..., Any])


def example(
    make_inputs: Callable[[], tuple], init: Callable[[], tuple] | None = None
) -> Callable[[F], F]:
    """Mark a module or function with example inputs, so KernelEvo can build a task from it.

    The decorator only records the callables; nothing runs until a task is built.
    """

    def mark(obj: F) -> F:
        obj.__kernelevo_example__ = (make_inputs, init)  # type: ignore[attr-defined]
        return obj

    return mark
