"""`kernelevo verify TASK CANDIDATE [--json]`: is the candidate a correct replacement?"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from kernelevo.cli import UserError, seconds, seed_int
from kernelevo.cli.waiting import StillWorking

if TYPE_CHECKING:
    from kernelevo.store import Store
    from kernelevo.verdict import Verdict


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "verify",
        help="check a candidate kernel against its task's PyTorch reference",
        description="Compile and check CANDIDATE (class ModelNew) against TASK (class Model). "
        "Exit code 0 only when verified.",
    )
    p.add_argument("task", help="KernelBench-format task file")
    p.add_argument("candidate", help="candidate file defining class ModelNew")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--size", choices=["small", "default"], help="input shapes (default: small without a GPU)"
    )
    p.add_argument(
        "--device", choices=["cpu", "cuda"], help="where to run (default: cuda when a GPU is found)"
    )
    p.add_argument("--timeout", type=seconds, help="seconds before the candidate is stopped")
    p.add_argument(
        "--seed", type=seed_int, help="base seed for the random input sets (default: fresh)"
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="ignore a stored verdict for the same task and candidate",
    )
    p.add_argument("--store", help="results store (default: .kernelevo/store.sqlite)")
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run candidates without isolation where the sandbox cannot start (verdicts say so)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="every op in custom kernels: no library GEMM, convolution or attention (a benchmark's rule)",
    )
    p.add_argument(
        "--allow-tf32",
        action="store_true",
        help="accept fp32 outputs at TF32 tolerance (baselines are then timed with TF32 too)",
    )
    p.add_argument(
        "--allow-bf16", action="store_true", help="accept fp32 outputs at bf16 tolerance"
    )
    p.add_argument(
        "--service",
        choices=["auto", "on", "off"],
        default=None,
        help="judge in the workspace's warm verification service: auto (default; $KERNELEVO_SERVICE) "
        "uses a running one and starts one on a GPU, on always, off never",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernelevo.store import Store
    from kernelevo.task import TaskError, read_task
    from kernelevo.text_file import file_problem

    try:  # said before a service or worker starts, and before a path is resolved (a looping link)
        read_task(args.task)
    except TaskError as exc:
        raise UserError(str(exc)) from exc
    problem = file_problem(args.candidate, "no such candidate file")
    if problem:
        raise UserError(problem)
    store = Store(args.store) if args.store else Store()
    verdict = _through_service(args, store)
    if verdict is None:
        from kernelevo.verify import verify_candidate  # the engine, imported only to judge here

        try:
            with _judging(args):
                verdict = verify_candidate(
                    args.task,
                    args.candidate,
                    store=store,
                    device=args.device,
                    size=args.size,
                    timeout=args.timeout,
                    seed=args.seed,
                    use_cache=not args.no_cache,
                    strict=args.strict,
                    precision=tuple(
                        p for p, on in (("tf32", args.allow_tf32), ("bf16", args.allow_bf16)) if on
                    ),
                )
        except TaskError as exc:
            raise UserError(str(exc)) from exc
    if args.json:
        json.dump(verdict.to_dict(), sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_verdict(verdict))
    return 0 if verdict.ok else 1


def format_verdict(verdict: Verdict) -> str:
    on_cpu = verdict.device.get("type") == "cpu"
    where = verdict.device.get("name") or ("CPU" if on_cpu else "device not reported")
    interpreted = verdict.device.get("triton_interpreter") and verdict.backend == "triton"
    lines = [
        f"{verdict.status.upper()}: {verdict.reason}",
        f"  backend {verdict.backend} · {verdict.kernel_launches} kernel launches · {where}"
        f"{' (Triton interpreter)' if interpreted else ''}"
        f" · {verdict.elapsed_s:.1f} s{' (cached)' if verdict.cached else ''}",
    ]
    if verdict.isolation == "none":
        lines.append("  UNSANDBOXED: the candidate ran without isolation (--no-sandbox)")
    if verdict.kept_library_ops:
        lines.append(f"  library ops kept: {', '.join(verdict.kept_library_ops)}")
    elif verdict.library_ops:
        lines.append(f"  library ops used: {', '.join(verdict.library_ops)}")
    for c in verdict.checks:
        if not c.passed:
            lines.append(f"  FAILED {c.name}: {c.message}")
    if verdict.device.get("type") == "cpu" and verdict.status == "verified":
        lines.append(
            "  speed not measured: no GPU on this machine (correctness checked on the CPU)"
        )
    if verdict.timings:
        t = verdict.timings
        lines.append(f"  timings: {json.dumps(t)[:400]}")
    return "\n".join(lines)


def _through_service(args: argparse.Namespace, store: Store) -> Verdict | None:
    """The verdict from the workspace's verification service (kernelevo/service.py), or None to judge
    in this process: service off, unsandboxed, or none running where auto does not start one."""
    import os
    from pathlib import Path

    from kernelevo import service
    from kernelevo.measure.gpus import default_device
    from kernelevo.verdict import Verdict

    mode = args.service or os.environ.get("KERNELEVO_SERVICE", "auto")
    if mode not in ("auto", "on") or os.environ.get("KERNELEVO_NO_SANDBOX") == "1":
        return None
    device = args.device or default_device()
    workspace = Path.cwd()
    req = service.Verify(
        task=str(Path(args.task).resolve()),
        candidate=str(Path(args.candidate).resolve()),
        store=str(Path(store.path).resolve()),
        size=args.size,
        timeout=args.timeout,
        seed=args.seed,
        use_cache=not args.no_cache,
        strict=args.strict,
        precision=[p for p, on in (("tf32", args.allow_tf32), ("bf16", args.allow_bf16)) if on],
    )
    limit = (args.timeout or (300.0 if device == "cpu" else 120.0)) * 4 + 120
    try:
        with _judging(args, device):
            reply = service.request(workspace, device, req, limit)
    except service.ServiceError:
        if mode == "auto" and device != "cuda":
            return None
        try:
            with StillWorking("starting the verification service", 180, "it gets up to 180 s"):
                running = service.start(workspace, device)
            said = "started" if running.started_here else "another command just started"
            print(
                f"kernelevo: {said} the verification service (pid {running.pid}; it keeps the "
                f"workers warm and exits after {service.IDLE_S / 60:.0f} idle minutes; "
                "--service off judges in this process)",
                file=sys.stderr,
            )
            with _judging(args, device):
                reply = service.request(workspace, device, req, limit)
        except service.ServiceError as exc:
            if mode == "on":
                raise UserError(f"{exc} (or verify with --service off)") from exc
            return None
    if reply.task_error is not None:
        raise UserError(reply.task_error)
    if reply.verdict is None:
        raise UserError(
            f"the verification service failed: {reply.error} (retry with --service off)"
        )
    return Verdict.from_dict(reply.verdict)


def _judging(args: argparse.Namespace, device: str | None = None) -> StillWorking:
    """The heartbeat of one verdict; its limit is the candidate's, as verify_candidate sets it."""
    if device is None:
        from kernelevo.measure.gpus import default_device

        device = args.device or default_device()
    limit = args.timeout or (300.0 if device == "cpu" else 120.0)
    where = "on the CPU (Triton's interpreter)" if device == "cpu" else "on the GPU"
    note = f"a candidate gets up to {limit:.0f} s, --timeout"
    return StillWorking(f"verifying {where}", limit, note)
