"""What the user accepts beside exact correctness: lower precision, and kernels that must do the work.

Both are decisions on a finished run of the checks (a `checks.Session`): precision levels the
outputs needed, and whether the candidate's own kernels produced what it returned.
"""

from __future__ import annotations

from typing import Any

from kernelevo.checks.compare import LEVEL_NAMES
from kernelevo.verdict import Check

REFERENCE_TF32 = (
    "the reference's convolution runs in TF32 (cudnn.allow_tf32, PyTorch's default): TF32 bounds"
)


def precision_check(session: Any, req: dict[str, Any]) -> Check | None:
    """Outputs that met only a looser precision level: accepted when the user accepted that level
    (ALLOW_TF32 / ALLOW_BF16 on the task, --allow-tf32 / --allow-bf16), else `incorrect` with the
    level it would pass at, so the user learns the kernel exists. A reference whose own float32
    convolution runs in TF32 (cuDNN's default) meets only TF32 bounds itself: its candidates are
    held to those, and the check says why."""
    if session.precision is None or session.precision_failure is None:
        return None
    accepted = list(req.get("precision") or [])
    if getattr(session, "task", None) is not None:
        accepted += [
            lv
            for lv, flag in (("tf32", "ALLOW_TF32"), ("tf32", "ALLOW_FP16"), ("bf16", "ALLOW_BF16"))
            if session.task.__dict__.get(flag)
        ]
    level, name = session.precision, LEVEL_NAMES[session.precision]
    ok = level in accepted or (level == "tf32" and "bf16" in accepted)
    detail = {"level": level, "rel_l2": session.precision_rel_l2, "accepted": ok}
    if not ok and level == "tf32" and getattr(session, "reference_tf32", False):
        detail.update(accepted=True, reference_tf32=True)
        return Check(
            "precision",
            True,
            f"TF32 tolerance (rel. error {session.precision_rel_l2:.2g}): {REFERENCE_TF32}",
            detail,
        )
    if ok:
        return Check(
            "precision",
            True,
            f"{name} tolerance (rel. error {session.precision_rel_l2:.2g}), accepted",
            detail,
        )
    message, _ = session.precision_failure
    flag = "ALLOW_TF32 = True" if level == "tf32" else "ALLOW_BF16 = True"
    cli = "--allow-tf32" if level == "tf32" else "--allow-bf16"
    return Check(
        "precision",
        False,
        f"{message}; passes at {name} tolerance (rel. error {session.precision_rel_l2:.2g}): "
        f"accept lower precision with {flag} in the task or {cli}",
        detail,
    )


def contribution_check(session: Any, launches: int) -> Check | None:
    """The candidate's own kernels must produce what it returns: a kernel whose result is dropped
    while PyTorch ops compute the output does no work of the reference."""
    if not session.custom_calls or not launches:
        return (
            None  # nothing traced (a C++ extension reached some other way): the GPU profile judges
        )
    missing = session.untraced_outputs
    return Check(
        "kernel_contributes",
        not missing,
        f"{missing[0]} does not depend on any custom kernel's result: the kernels ran but PyTorch ops "
        "computed what the candidate returns"
        if missing
        else "every output comes from the custom kernels",
        {"outputs_without_kernel": missing[:5]},
    )
