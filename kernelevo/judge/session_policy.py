"""A verification's policy step, after the outputs matched: the library-op rule, whether the
candidate's own kernels produced the outputs, its kernel names (profiled on a GPU when the
rule needs them), a kernel launched at all, and the precision level the outputs met.

Decided in the judge process (judge/policy_ops.py) from what the candidate process counted;
the session only asks and records, and raises CandidateFailed on the first failed check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelevo.judge import requests as rq
from kernelevo.judge.clients import CandidateFailed
from kernelevo.verdict import Check
from kernelevo.worker import candidate_requests as cr
from kernelevo.worker.candidate_replies import Reported

if TYPE_CHECKING:
    from kernelevo.judge.session import Session


def decide_policy(session: Session, report: Reported) -> None:
    """Library ops, kernels that contribute, precision: decided in the judge (checks/opwatch.py,
    checks/policy.py) from what the candidate process counted; the engine does not import torch."""
    allowed = list(session.task.hints.get("ALLOWED_LIBRARY_OPS", []) or [])
    strict = bool(session.policy_args.get("strict"))
    cand_ops = {str(k): int(v) for k, v in report.ops.items()}
    decided = session.judge.ask(
        rq.LibraryPolicy(
            cand_ops=cand_ops,
            allowed=allowed,
            backend=session.backend,
            strict=strict,
            precision=list(session.policy_args.get("precision") or []),
            custom_calls=session.custom_calls,
            untraced=session.untraced[:50],
            launches=session.launches,
            kernels=len(report.kernels),
        )
    )
    session.library_ops, session.kept = decided.library_ops, decided.kept
    session.precision = decided.precision
    for check in decided.checks:
        session.checks.append(check)
        if not check.passed:
            raise CandidateFailed("rejected", check.message)
    session.needs_profile = decided.needs_profile
    if session.device == "cuda" and session.needs_profile:
        inp = session.judge.ask(rq.Inputs(set="profile", seed=session.base + 1))
        profiled = session.cand.ask(
            cr.Profile(set="profile", args=inp.args), "profiling the kernels"
        )
        names = profiled.kernels
        session.cand.ask(cr.Drop(set="profile"), "dropping an input set")
        session.judge.ask(rq.Drop(set="profile"))
        kc = session.judge.ask(
            rq.KernelPolicy(
                names=[str(n) for n in names][:10000],
                allowed=allowed,
                launched=[str(k) for k in report.kernels][:1000],
                source=session.cand_path.read_text(),
                strict=strict,
            )
        ).check
        session.checks.append(kc)
        if not kc.passed:
            raise CandidateFailed("rejected", kc.message)
        if session.backend == "cuda_inline":
            session.launches = max(session.launches, len(kc.detail["custom_kernels"]))
    session.checks.append(
        Check(
            "kernel_launched",
            session.launches > 0,
            f"{session.launches} kernel launches"
            if session.launches
            else "no custom kernel launched: the outputs came from PyTorch ops",
            {"launches": session.launches},
        )
    )
    if session.launches == 0:
        raise CandidateFailed(
            "rejected",
            "no kernel launched: the outputs came from PyTorch ops, not a custom kernel",
        )
    if session.precision is not None:
        session.checks.append(session.precision)
        if not session.precision.passed:
            raise CandidateFailed("incorrect", session.precision.message)
    session.split = decided.split
