"""Comparing outputs of any size with checks/compare.py's rules, a slice at a time.

compare_outputs works in float64, several temporaries of the output's size; for a
16 GiB output that alone would be more memory than the task. Large outputs are compared
in slices along the first dimension with the same function, and the relative L2 error
is put together from the slices, so the bounds are the same as for a small output.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from kernelevo.checks.compare import (
    compare_outputs,
    flatten_outputs,
    rel_l2_of,
    relative_l2,
    tolerance_for,
)

SLICE_ELEMENTS = 1 << 25


def compare_any_size(
    ref: Any,
    cand: Any,
    tolerance_hint: Any = None,
    slice_elements: int | None = None,
    precision: str | None = None,
) -> tuple[bool, str, dict[str, Any]]:
    slice_elements = slice_elements or SLICE_ELEMENTS
    refs, cands = flatten_outputs(ref), flatten_outputs(cand)
    if len(refs) != len(cands) or not any(
        isinstance(r, torch.Tensor) and r.numel() > slice_elements for r in refs
    ):
        return compare_outputs(ref, cand, tolerance_hint, precision)
    worst: dict[str, Any] = {}
    for i, (r, c) in enumerate(zip(refs, cands, strict=True)):
        label = f"output {i}" if len(refs) > 1 else "output"
        small = not isinstance(r, torch.Tensor) or r.numel() <= slice_elements
        header = (
            not isinstance(c, torch.Tensor)
            or type(c) is not torch.Tensor
            or c.shape != r.shape
            or c.dtype != r.dtype
            or c.device != r.device
        )
        if small or header:  # a header mismatch is reported before any arithmetic
            ok, msg, detail = compare_outputs(r, c, tolerance_hint, precision)
            if not ok:
                return False, msg.replace("output", label, 1), detail
            continue
        ok, msg, detail = _sliced(r, c, tolerance_hint, slice_elements, precision)
        if not ok:
            return False, msg.replace("output", label, 1), detail
        worst = detail if not worst or rel_l2_of(detail) > rel_l2_of(worst) else worst
    return True, "outputs match", worst


def _sliced(
    r: torch.Tensor, c: torch.Tensor, hint: Any, slice_elements: int, precision: str | None = None
) -> tuple[bool, str, dict[str, Any]]:
    rows, crows = (r, c) if r.dim() > 1 and r.shape[0] > 1 else (r.reshape(-1), c.reshape(-1))
    per_row = rows[0].numel() if rows.dim() > 1 else 1
    step = max(1, slice_elements // max(per_row, 1))
    tol = tolerance_for(r.dtype, hint, precision)
    err_sq = ref_sq = 0.0
    worst: dict[str, Any] = {}
    for start in range(0, rows.shape[0], step):
        rs, cs = rows[start : start + step], crows[start : start + step]
        ok, msg, detail = compare_outputs(rs, cs, hint, precision)
        for key in ("first_index", "max_err_index"):
            if detail.get(key):
                detail[key] = [detail[key][0] + start, *detail[key][1:]]
        if (
            not ok and "exceeds" not in msg
        ):  # element-wise bound or NaN: decided by this slice alone
            return False, f"{msg} (rows {start}..{start + rs.shape[0] - 1})", detail
        if tol is not None:  # the slice's norms, as compare_outputs found them
            err_norm, ref_norm = detail.get("norms", (0.0, 0.0))
            err_sq, ref_sq = err_sq + err_norm**2, ref_sq + ref_norm**2
        worst = detail if not worst or rel_l2_of(detail) > rel_l2_of(worst) else worst
    if tol is None:
        return True, "outputs match", worst
    rel_l2 = relative_l2(math.sqrt(err_sq), math.sqrt(ref_sq))
    worst = {**worst, "rel_l2": rel_l2}
    if rel_l2 is not None and rel_l2 > tol["rel_l2"]:
        return (
            False,
            (
                f"output: relative L2 error {rel_l2:.3g} exceeds {tol['rel_l2']:g} "
                "(lower precision than the reference?)"
            ),
            {**worst, "tolerance_failure": True},
        )
    return True, "outputs match", worst
