"""A float64 second opinion on a float32 output that misses only the relative-L2 bound.

That bound is there to catch kernels computing in lower precision (TF32 is ~6e-4 off), but
a reference with cancellation in it (a mean near zero that scales the output) is itself
about that far from the exact result, and a correct kernel summing in another order
differs from it by as much. Running the reference again in float64 tells the two apart:
the candidate passes when it is no farther from the float64 result than twice the float32
reference is, or than the output moves when every input moves by a few rounding units
(what any float32 algorithm's rounding amounts to). Well-conditioned outputs move by
~1e-6, so the bound still rejects TF32 there.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from kernelevo.verify.compare import compare_outputs, flatten_outputs

MAX_BYTES = 256 << 20  # float32 inputs, weights and outputs together; float64 doubles them
ROUNDING_UNITS = 16  # each input moved by this many float32 rounding units (2**-24)


def float64_opinion(
    model: torch.nn.Module,
    args: list[Any],
    ref_out: Any,
    cand_out: Any,
    hint: Any = None,
    precision: str | None = None,
) -> tuple[bool, str, dict[str, Any]] | None:
    """(passed, message, detail) from the float64 comparison; None when no opinion can be had
    (the task is too large, or its forward does not run in float64): the float32 verdict stands."""
    refs, cands = flatten_outputs(ref_out), flatten_outputs(cand_out)
    if _bytes([*args, *refs, *model.parameters(), *model.buffers()]) > MAX_BYTES:
        return None
    try:
        with torch.no_grad():
            model64 = copy.deepcopy(model).double()
            exact = flatten_outputs(model64(*[_widened(a) for a in args]))
            moved = flatten_outputs(model64(*[_widened(a, moved=True) for a in args]))
    except Exception:  # the user's forward need not run in float64
        return None
    if not len(exact) == len(moved) == len(refs) == len(cands):
        return None
    worst: dict[str, Any] = {}
    for i, (r, c, e, m) in enumerate(zip(refs, cands, exact, moved, strict=True)):
        label = f"output {i}" if len(refs) > 1 else "output"
        passed, message, detail = compare_outputs(r, c, hint, precision)
        message = message.replace("output", label, 1)
        if passed:
            continue
        only_l2 = detail.get("tolerance_failure") and detail.get("mismatches") == 0
        if not only_l2 or not isinstance(e, torch.Tensor) or e.shape != r.shape:
            return None
        cand_err, ref_err, moves = _rel_l2(c, e), _rel_l2(r, e), _rel_l2(m, e)
        allowed = max(float(detail["tolerance"]["rel_l2"]), 2 * ref_err, moves)
        opinion = {"candidate": cand_err, "reference": ref_err, "input_sensitivity": moves}
        detail = {**detail, "float64": opinion}
        if cand_err > allowed:
            return (
                False,
                f"{message}; against a float64 run of the reference it is {cand_err:.3g}, the float32 "
                f"reference {ref_err:.3g}, the output's sensitivity to its inputs {moves:.3g}",
                detail,
            )
        worst = detail if not worst or cand_err > worst["float64"]["candidate"] else worst
    return (
        True,
        f"outputs match; {_said(worst)}" if worst else "outputs match",
        worst,
    )


def _said(detail: dict[str, Any]) -> str:
    f = detail["float64"]
    return (
        f"relative L2 error {detail['rel_l2']:.3g} to the float32 reference, {f['candidate']:.3g} "
        f"to a float64 run of it, where the float32 reference is {f['reference']:.3g} off "
        f"(input sensitivity {f['input_sensitivity']:.3g})"
    )


def _widened(value: Any, moved: bool = False) -> Any:
    """A floating tensor in float64, optionally moved away from zero by ROUNDING_UNITS units."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        return value
    wide = value.detach().to(torch.float64)
    return wide + (ROUNDING_UNITS * 2.0**-24) * wide.abs() if moved else wide


def _rel_l2(value: torch.Tensor, exact: torch.Tensor) -> float:
    exact = exact.detach().to(torch.float64)
    diff = (value.detach().to(torch.float64) - exact).nan_to_num(0.0, 0.0, 0.0)
    norm, off = float(exact.nan_to_num(0.0, 0.0, 0.0).norm()), float(diff.norm())
    return off / norm if norm > 0 else (0.0 if off == 0 else float("inf"))


def _bytes(values: list[Any]) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))
