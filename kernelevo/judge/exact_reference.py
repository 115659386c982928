"""A float64 second opinion on a float32 output that misses a bound through rounding alone.

That bound is there to catch kernels computing in lower precision (TF32 is ~6e-4 off), but
a reference with cancellation in it (a mean near zero that scales the output) is itself
about that far from the exact result, and a correct kernel summing in another order
differs from it by as much. Running the reference again in float64 tells the two apart:
the candidate passes when it is no farther from the float64 result than twice the float32
reference is, or than the output moves when every input moves by a few rounding units
(what any float32 algorithm's rounding amounts to). Well-conditioned outputs move by
~1e-6, so the bound still rejects TF32 there.

The element-wise bound has the same blind spot: a long reduction (a matrix-vector product over
100k terms) has outputs of ~300 whose float32 rounding is ~5e-4, so an output element near zero
misses atol=1e-4 in whichever order it is summed, the reference's own order included. Where the
relative-L2 bound holds and only elements miss, every element is judged against the float64
result, allowed its tolerance plus float32 rounding there: the largest of 4x the float32
reference's error at that element, 8x its root-mean-square error over the output, and 4 rounding
units of the element's sum of |terms| (the model run on the magnitudes of its inputs and
weights: a sequential scan rounds more than the reference's pairwise one, and is as correct).
A wrong element is off by a term of the sum, orders of magnitude more; TF32 and bf16 miss the
L2 bound first, which still binds every candidate.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from kernelevo.checks.compare import compare_outputs, flatten_outputs

MAX_BYTES = 256 << 20  # float32 inputs, weights and outputs together; float64 doubles them
ROUNDING_UNITS = 16  # each input moved by this many float32 rounding units (2**-24)
AT_ELEMENT, OVER_OUTPUT = 4.0, 8.0  # the reference's rounding allowed: at the element, RMS
TERM_UNITS = 4  # rounding units of the sum of |terms| any summation order may be off by


def applies(detail: dict[str, Any]) -> bool:
    """Whether a failed float32 comparison is one rounding can explain: only the relative-L2 bound
    missed, or only elements missed while the relative-L2 bound held."""
    if not detail.get("tolerance_failure"):
        return False
    if detail.get("mismatches") == 0:
        return True
    rel_l2, bound = detail.get("rel_l2"), (detail.get("tolerance") or {}).get("rel_l2")
    return rel_l2 is not None and bound is not None and rel_l2 <= bound


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
    terms: list[Any] | None = None  # run on magnitudes only where an element missed
    worst: dict[str, Any] = {}
    for i, (r, c, e, m) in enumerate(zip(refs, cands, exact, moved, strict=True)):
        label = f"output {i}" if len(refs) > 1 else "output"
        passed, message, detail = compare_outputs(r, c, hint, precision)
        message = message.replace("output", label, 1)
        if passed:
            continue
        if not applies(detail) or not isinstance(e, torch.Tensor) or e.shape != r.shape:
            return None
        cand_err, ref_err, moves = _rel_l2(c, e), _rel_l2(r, e), _rel_l2(m, e)
        allowed = max(float(detail["tolerance"]["rel_l2"]), 2 * ref_err, moves)
        opinion: dict[str, Any] = {
            "candidate": cand_err,
            "reference": ref_err,
            "input_sensitivity": moves,
        }
        if detail["mismatches"]:
            terms = terms if terms is not None else _magnitudes(model64, args, len(refs))
            opinion.update(_elements(r, c, e, terms[i], detail["tolerance"]))
        detail = {**detail, "float64": opinion}
        if cand_err > allowed:
            return (
                False,
                f"{message}; against a float64 run of the reference it is {cand_err:.3g}, the float32 "
                f"reference {ref_err:.3g}, the output's sensitivity to its inputs {moves:.3g}",
                detail,
            )
        if opinion.get("outside"):
            return (
                False,
                f"{message}; against a float64 run of the reference {opinion['outside']} elements are "
                f"off by more than float32 rounding allows (max {opinion['max_off']:.3g} "
                f"at {opinion['max_at']}, allowed there {opinion['allowed_at']:.3g})",
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
    said = (
        f"relative L2 error {detail['rel_l2']:.3g} to the float32 reference, {f['candidate']:.3g} "
        f"to a float64 run of it, where the float32 reference is {f['reference']:.3g} off "
        f"(input sensitivity {f['input_sensitivity']:.3g})"
    )
    if "outside" in f:
        said += (
            f"; {detail['mismatches']} elements outside atol/rtol of the float32 reference are within "
            f"float32 rounding of the float64 run (largest {f['max_off']:.3g}, allowed there "
            f"{f['allowed_at']:.3g})"
        )
    return said


def _magnitudes(model64: torch.nn.Module, args: list[Any], n: int) -> list[Any]:
    """The model run on the magnitudes of its inputs and weights: for a sum or a product of sums,
    each output's sum of |terms|, on which any float32 summation order's rounding depends
    (a sequential scan is off by more than a pairwise one); None each where it cannot run."""
    try:
        with torch.no_grad():
            absolute = copy.deepcopy(model64)
            for t in [*absolute.parameters(), *absolute.buffers()]:
                if t.is_floating_point():
                    t.abs_()
            out = flatten_outputs(absolute(*[_widened(a, absolute=True) for a in args]))
    except Exception:  # a forward that needs signed values: the other allowances stand
        return [None] * n
    return out if len(out) == n else [None] * n


def _elements(
    r: torch.Tensor, c: torch.Tensor, e: torch.Tensor, terms: Any, tol: dict[str, float]
) -> dict[str, Any]:
    """Each element's distance from the float64 result against its tolerance plus the float32
    rounding there: how many are beyond it, and where the worst is."""
    e64 = e.detach().to(torch.float64)
    r64, c64 = r.detach().to(torch.float64), c.detach().to(torch.float64)
    finite = torch.isfinite(e64) & torch.isfinite(r64) & torch.isfinite(c64)
    zero = torch.zeros((), dtype=torch.float64, device=e64.device)
    ref_off = (r64 - e64).abs().where(finite, zero)
    rms = float(ref_off.square().sum() / max(int(finite.sum()), 1)) ** 0.5
    allowed = tol["atol"] + tol["rtol"] * e64.abs().where(finite, zero)
    rounding = (AT_ELEMENT * ref_off).clamp(min=OVER_OUTPUT * rms)
    if isinstance(terms, torch.Tensor) and terms.shape == e64.shape:
        sums = terms.detach().to(torch.float64).abs().nan_to_num(0.0, 0.0, 0.0)
        rounding = torch.maximum(rounding, TERM_UNITS * 2.0**-24 * sums)
    allowed = allowed + rounding
    off = (c64 - e64).abs().where(finite, zero)
    ratio = off / allowed
    worst = int(ratio.reshape(-1).argmax())
    at = list(torch.unravel_index(torch.tensor(worst), tuple(r.shape))) if r.dim() else []
    return {
        "outside": int((off > allowed).sum()),
        "max_off": float(off.reshape(-1)[worst]),
        "allowed_at": float(allowed.reshape(-1)[worst]),
        "max_at": [int(i) for i in at],
        "reference_rounding_rms": rms,
    }


def _widened(value: Any, moved: bool = False, absolute: bool = False) -> Any:
    """A floating tensor in float64, optionally moved away from zero by ROUNDING_UNITS units or
    made non-negative."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        return value
    wide = value.detach().to(torch.float64)
    if absolute:
        return wide.abs()
    return wide + (ROUNDING_UNITS * 2.0**-24) * wide.abs() if moved else wide


def _rel_l2(value: torch.Tensor, exact: torch.Tensor) -> float:
    exact = exact.detach().to(torch.float64)
    diff = (value.detach().to(torch.float64) - exact).nan_to_num(0.0, 0.0, 0.0)
    norm, off = float(exact.nan_to_num(0.0, 0.0, 0.0).norm()), float(diff.norm())
    return off / norm if norm > 0 else (0.0 if off == 0 else float("inf"))


def _bytes(values: list[Any]) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))
