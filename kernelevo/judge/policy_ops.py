"""The judge's policy replies: the library-op rule, whether the candidate's own kernels produced
its outputs, the precision level its outputs met, and the kernel-name rule, decided from the
candidate process's counts (data) and what the judge saw of the reference.

Apart from judge/process.py, which holds the reference and the input sets, because these are
decisions over facts already gathered; the rules themselves are in checks/opwatch.py and
checks/policy.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelevo.judge.replies import KernelDecided, LibraryDecided
from kernelevo.judge.requests import KernelPolicy, LibraryPolicy


@dataclass
class PrecisionFacts:
    """What the judge's comparisons found about precision, for the policy's checks."""

    task: Any  # the task's module (its ALLOW_TF32 / ALLOW_BF16)
    precision: str | None  # the loosest level the outputs needed so far (None: the strictest)
    precision_failure: tuple[str, dict[str, Any]] | None  # the first failure a looser level passed
    precision_rel_l2: float
    reference_tf32: bool  # the reference's convolution ran in TF32


def library_policy(req: LibraryPolicy, ref_ops: set[str], facts: PrecisionFacts) -> LibraryDecided:
    """The library-op check, the contribution check and the precision verdict for one candidate."""
    from types import SimpleNamespace

    from kernelevo.checks.opwatch import (
        describe_split,
        is_neutral,
        library_op_check,
        needs_profile,
    )
    from kernelevo.checks.policy import contribution_check, precision_check

    cand_ops = {str(k): int(v) for k, v in (req.cand_ops or {}).items()}
    strict, allowed = bool(req.strict), list(req.allowed or [])
    lib = library_op_check(ref_ops, cand_ops, allowed, strict)
    checks = [lib]
    seen = SimpleNamespace(
        custom_calls=int(req.custom_calls or 0),
        untraced_outputs=[str(u) for u in req.untraced or []],
        task=facts.task,
        precision=facts.precision,
        precision_failure=facts.precision_failure,
        precision_rel_l2=facts.precision_rel_l2,
        reference_tf32=facts.reference_tf32,
    )
    contributes = contribution_check(seen, int(req.launches or 0)) if lib.passed else None
    if contributes is not None:
        checks.append(contributes)
    precision = precision_check(seen, {"precision": list(req.precision or [])})
    kept = lib.detail.get("kept", [])
    split = (
        describe_split(
            kept,
            lib.detail.get("replaced", []),
            int(req.kernels or 0) or 1,
            req.backend or "triton",
        )
        if kept
        else ""
    )
    return LibraryDecided(
        checks=checks,
        precision=precision,
        library_ops=sorted(n for n in cand_ops if not is_neutral(n)),
        kept=list(kept),
        split=split,
        needs_profile=bool(needs_profile(req.backend, ref_ops)),
    )


def kernel_policy(req: KernelPolicy, ref_ops: set[str]) -> KernelDecided:
    """The check on the names of the kernels the candidate launched."""
    from kernelevo.checks.opwatch import kernel_check, own_kernel_names

    own = set(req.launched or []) | own_kernel_names(req.source or "")
    return KernelDecided(
        kernel_check(list(req.names or []), ref_ops, list(req.allowed or []), own, bool(req.strict))
    )
