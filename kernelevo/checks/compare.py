"""Comparing a candidate's outputs with the reference's: per-dtype tolerances plus a relative L2 bound.

The element-wise bound alone lets a kernel drift everywhere by just under the
tolerance (quietly lower precision); the L2 bound catches that. An all-zero reference
(a product that underflows, a masked output) has no relative error to speak of: there
the element-wise bound alone decides.
"""

from __future__ import annotations

from typing import Any

import torch

from kernelevo.checks.tolerance import (  # noqa: F401  (re-exported)
    DEFAULT_TOLERANCE,
    LEVEL_NAMES,
    PRECISION_LEVELS,
    float_tolerance,
)


def tolerance_for(
    dtype: torch.dtype, hint: Any = None, precision: str | None = None
) -> dict[str, float] | None:
    """None means exact comparison (integers, bool). `precision` loosens float32 bounds to a level
    of PRECISION_LEVELS (never tighter than the task's own tolerance)."""
    name = str(dtype).replace("torch.", "")
    if not dtype.is_floating_point and not dtype.is_complex:
        return None
    return float_tolerance(name, hint, precision)


def relative_l2(err_norm: float, ref_norm: float) -> float | None:
    """The L2 norm of the error over the reference's; None where the reference is all zeros and
    the error is not (no relative error exists, so no relative bound applies)."""
    if ref_norm > 0:
        return err_norm / ref_norm
    return 0.0 if err_norm == 0 else None


def rel_l2_of(detail: dict[str, Any]) -> float:
    """A comparison's relative L2 error for ranking outputs by it (0 where none exists)."""
    return float(detail.get("rel_l2") or 0.0)


def flatten_outputs(out: Any) -> list[Any]:
    """Outputs (or inputs) as one list: sequences and dicts (a Hugging Face ModelOutput) opened,
    in order."""
    if isinstance(out, dict):
        return flatten_outputs(list(out.values()))
    if isinstance(out, (tuple, list)):
        items: list[Any] = []
        for o in out:
            items.extend(flatten_outputs(o))
        return items
    return [out]


def compare_outputs(
    ref: Any, cand: Any, tolerance_hint: Any = None, precision: str | None = None
) -> tuple[bool, str, dict[str, Any]]:
    """Returns (passed, message, detail). Detail carries locations and magnitudes for feedback;
    `tolerance_failure` marks a failure that a looser precision level might pass."""
    refs, cands = flatten_outputs(ref), flatten_outputs(cand)
    if len(refs) != len(cands):
        return False, f"output count mismatch: expected {len(refs)} outputs, got {len(cands)}", {}
    worst: dict[str, Any] = {}
    for i, (r, c) in enumerate(zip(refs, cands, strict=True)):
        label = f"output {i}" if len(refs) > 1 else "output"
        if not isinstance(r, torch.Tensor):
            if isinstance(c, torch.Tensor) or r != c:
                return False, f"{label}: expected {r!r}, got {c!r}", {}
            continue
        if type(c) is not torch.Tensor:
            return False, f"{label}: expected a plain torch.Tensor, got {type(c).__name__}", {}
        if c.shape != r.shape:
            return (
                False,
                f"{label}: shape mismatch: expected {tuple(r.shape)}, got {tuple(c.shape)}",
                {},
            )
        if c.dtype != r.dtype:
            return False, f"{label}: dtype mismatch: expected {r.dtype}, got {c.dtype}", {}
        if c.device != r.device:
            return False, f"{label}: device mismatch: expected {r.device}, got {c.device}", {}
        tol = tolerance_for(r.dtype, tolerance_hint, precision)
        rr, cc = r.detach(), c.detach()
        if tol is None:
            diff = rr != cc
            n_bad = int(diff.sum())
            if n_bad:
                idx = _first_index(diff)
                return (
                    False,
                    f"{label}: {n_bad} of {rr.numel()} elements differ (exact dtype {r.dtype}); first at {idx}",
                    {"mismatches": n_bad, "first_index": idx, **_values_at(rr, cc, idx)},
                )
            continue
        r64, c64 = rr.to(torch.float64), cc.to(torch.float64)
        ref_nonfinite = ~torch.isfinite(r64)
        new_nonfinite = ~torch.isfinite(c64) & ~ref_nonfinite
        same_special = ref_nonfinite & (torch.isnan(r64) & torch.isnan(c64) | (r64 == c64))
        lost_special = ref_nonfinite & ~same_special
        finite = ~ref_nonfinite
        zero = torch.zeros((), dtype=torch.float64, device=r64.device)
        err = (c64 - r64).abs().where(finite, zero)
        bad = err > tol["atol"] + tol["rtol"] * r64.abs().where(finite, zero)
        # every figure of a passing output in one transfer: each float() or item() on a GPU
        # tensor waits for the device, and a comparison asked for nine
        figures = [new_nonfinite.sum(), lost_special.sum(), bad.sum(), err.norm()]
        figures += [r64.where(finite, zero).norm()]
        if err.numel():  # the largest error: where, and both values there (no index on the host)
            at = err.reshape(-1).argmax().view(1)
            figures += [err.reshape(-1).index_select(0, at), at]
            figures += [r64.reshape(-1).index_select(0, at), c64.reshape(-1).index_select(0, at)]
        got: list[float] = torch.cat([f.to(torch.float64).view(-1) for f in figures]).tolist()
        n_new, n_lost, n_bad = int(got[0]), int(got[1]), int(got[2])
        err_norm, ref_norm = got[3], got[4]
        if n_new:
            idx = _first_index(new_nonfinite)
            return (
                False,
                (
                    f"{label}: {n_new} NaN/Inf values where the reference is finite, first at {idx} "
                    "(unwritten output elements read as NaN)"
                ),
                {"nonfinite": n_new, "first_index": idx},
            )
        if n_lost:
            idx = _first_index(lost_special)
            return (
                False,
                f"{label}: non-finite reference values not reproduced, first at {idx}",
                {"first_index": idx},
            )
        max_err = got[5] if err.numel() else 0.0
        rel_l2 = relative_l2(err_norm, ref_norm)
        where = _unravel(int(got[6]), tuple(rr.shape)) if err.numel() else []
        detail = {
            "max_abs_err": max_err,
            "max_err_index": where,
            "rel_l2": rel_l2,
            "norms": [err_norm, ref_norm],  # of the error and of the reference (finite elements)
            "mismatches": n_bad,
            "numel": int(rr.numel()),
            "tolerance": tol,
            "tolerance_failure": r.dtype == torch.float32,
        }
        if n_bad:
            first = _first_index(bad)
            detail.update(first_index=first, **_values_at(r64, c64, first))
        elif where:
            detail.update(expected_at_max=got[7], got_at_max=got[8])
        worst = detail if not worst or rel_l2_of(detail) > rel_l2_of(worst) else worst
        if n_bad:
            return (
                False,
                (
                    f"{label}: {n_bad} of {rr.numel()} elements outside atol={tol['atol']:g}, rtol={tol['rtol']:g}; "
                    f"max abs error {max_err:.3g} at {where}{_relative_said(rel_l2)}"
                ),
                detail,
            )
        if rel_l2 is not None and rel_l2 > tol["rel_l2"]:
            return (
                False,
                (
                    f"{label}: relative L2 error {rel_l2:.3g} exceeds {tol['rel_l2']:g} "
                    "(lower precision than the reference?)"
                ),
                detail,
            )
    return True, "outputs match", worst


def _relative_said(rel_l2: float | None) -> str:
    if rel_l2 is None:
        return " (the reference is all zeros)"
    return f", relative L2 error {rel_l2:.3g}"


def _values_at(ref: torch.Tensor, cand: torch.Tensor, index: list[int]) -> dict[str, Any]:
    """The reference's and the candidate's value at `index`, for a model to see what went wrong there."""
    if not index:
        return {}
    at = tuple(index)
    return {"expected": ref[at].item(), "got": cand[at].item()}


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    """The index of element `flat` of a row-major tensor of `shape`."""
    index = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return index[::-1]


def _first_index(mask: torch.Tensor) -> list[int]:
    nz = mask.nonzero()
    return [int(v) for v in nz[0]] if nz.numel() else []


def loosest_needed(
    ref: Any, cand: Any, tolerance_hint: Any, start: str | None, compare: Any = None
) -> tuple[str | None, str, dict[str, Any]]:
    """The first precision level, from `start` on, at which the outputs match; (None, ...) if none.
    `compare` is the comparison to use (the judge's compares large outputs a slice at a time)."""
    levels = list(PRECISION_LEVELS)
    for level in levels[levels.index(start) + 1 if start else 0 :]:
        passed, message, detail = (compare or compare_outputs)(
            ref, cand, tolerance_hint, precision=level
        )
        if passed:
            return level, message, detail
    return None, "", {}
