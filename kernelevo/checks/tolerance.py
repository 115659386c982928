"""The comparison bounds per floating dtype, by dtype name: torch-free, so the search's engine
process can state them in its prompts without importing torch (seconds, in the event loop)."""

from __future__ import annotations

from typing import Any

DEFAULT_TOLERANCE: dict[str, dict[str, float]] = {
    "float64": {"atol": 1e-7, "rtol": 1e-7, "rel_l2": 1e-9},
    "float32": {"atol": 1e-4, "rtol": 1e-4, "rel_l2": 1e-5},
    "float16": {"atol": 1e-2, "rtol": 1e-2, "rel_l2": 1e-3},
    "bfloat16": {"atol": 2e-2, "rtol": 2e-2, "rel_l2": 8e-3},
}


# Looser bounds an fp32 output may meet when a kernel computes in lower precision, weakest last:
# TF32 and fp16 keep 10 mantissa bits (Triton's tl.dot default is TF32), bf16 keeps 7.
PRECISION_LEVELS: dict[str, dict[str, float]] = {
    "tf32": {"atol": 5e-2, "rtol": 1e-2, "rel_l2": 1.5e-3},
    "bf16": {"atol": 1e-1, "rtol": 2e-2, "rel_l2": 8e-3},
}
LEVEL_NAMES = {"tf32": "TF32", "bf16": "bf16"}


def float_tolerance(name: str, hint: Any = None, precision: str | None = None) -> dict[str, float]:
    """The bounds for floating dtype `name` ("float32"...): the default, the task's TOLERANCE
    hint over it, and `precision` (a PRECISION_LEVELS key) loosening float32 (never tightening)."""
    tol = dict(DEFAULT_TOLERANCE.get(name, DEFAULT_TOLERANCE["float32"]))
    if isinstance(hint, dict):
        if name in hint and isinstance(hint[name], dict):
            tol.update(hint[name])
        else:
            tol.update({k: float(v) for k, v in hint.items() if k in ("atol", "rtol", "rel_l2")})
    if precision and name == "float32":
        tol = {k: max(v, PRECISION_LEVELS[precision][k]) for k, v in tol.items()}
    return tol
