"""The record of a target's example inputs, wherever they came from (the user's decorator,
comments or get_inputs(), a captured run, the signature), and the error when there are none.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from kernelevo.targets.small_sizes import SmallSizes


def a_named(name: str) -> str:
    """'a DynamicCache', 'an EncoderDecoderCache': a class name in a sentence."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


class NoExampleInputs(Exception):
    """No example inputs for the target; the message says what to add."""


class ModuleMissing(NoExampleInputs):
    """The target's file imports a package this environment lacks: no example inputs can help
    until it is installed, so that is what the message leads with."""


@dataclass
class ExampleInputs:
    source: str
    code: str
    note: str
    uses: set[str] = field(default_factory=set)
    statements: list[ast.stmt] = field(default_factory=list)
    init_blob: str = ""  # torch.save bytes (base64) of config objects the constructor takes
    small: SmallSizes = field(default_factory=SmallSizes)  # sizes the CPU scales down
    names: list[str] = field(default_factory=list)  # the recorded call's parameter names, in order
    # keyword arguments the recorded call passed as plain values (name -> source), passed by the
    # task's Model as they were: without them the target computed something else
    keywords: dict[str, str] = field(default_factory=dict)
    # constructor arguments taken by keyword only: get_init_inputs() lists them last, in this order
    init_keywords: list[str] = field(default_factory=list)
