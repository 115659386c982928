"""Hand-written Triton templates, instantiated when the reference's traced graph matches.

Each module has `match(graph) -> params | None` (structure only: ops, shapes, operands;
never names) and `generate(graph, params) -> [(name, candidate source)]`.
"""

from __future__ import annotations

from kernelevo.offline.templates import (
    elementwise,
    gemm,
    library_epilogue,
    library_reduction,
    norm,
    reduction,
    softmax,
)

TEMPLATES = [elementwise, softmax, norm, reduction, gemm, library_epilogue, library_reduction]
