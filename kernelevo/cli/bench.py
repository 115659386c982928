"""`kernelevo bench TASK [CANDIDATE...]`: how fast is each candidate, against eager and torch.compile?

Every candidate is verified first (a wrong kernel has no speed), then timed in its own
process on the judge's rotating input sets; eager and torch.compile are timed by the judge
(kernelevo/judge/). The reference rows come from a run of their own, so a task can be
benchmarked with no candidate at all.

Without a GPU the candidates are verified (Triton interpreter, small shapes), their
statuses printed, and the command says that speed cannot be measured here and exits 2.
Exit codes on a GPU: 0 when every candidate verified and was timed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kernelevo.cli import UserError, seconds, seed_int
from kernelevo.cli.table import render

NO_GPU = (
    "speed not measured: no CUDA GPU on this machine (candidates were checked for correctness only)"
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "bench",
        help="time candidates against eager PyTorch and torch.compile",
        description="Verify each CANDIDATE against TASK, then time it interleaved with the eager "
        "reference and torch.compile. With no candidate, time the reference and "
        "torch.compile alone. Exit 0 when every candidate verified and was timed, 1 when "
        "one did not, 2 on bad input or where no GPU can measure speed.",
    )
    p.add_argument("task", help="KernelBench-format task file")
    p.add_argument(
        "candidates", nargs="*", metavar="CANDIDATE", help="candidate files defining class ModelNew"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run candidates without isolation where the sandbox cannot start (verdicts say so)",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--max-autotune",
        action="store_true",
        help="compare against torch.compile(mode='max-autotune') (slow to compile)",
    )
    group.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    p.add_argument(
        "--size", choices=["small", "default"], help="input shapes (default: small without a GPU)"
    )
    p.add_argument(
        "--seed", type=seed_int, help="base seed for the random input sets (default: fresh)"
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        help="seconds allowed per candidate for verifying, and again for timing",
    )
    p.add_argument(
        "--max-time",
        type=seconds,
        default=10.0,
        help="seconds of measuring per timing run (default 10)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernelevo.evaluate import Evaluator
    from kernelevo.task import TaskError, read_task
    from kernelevo.text_file import TextFileError, read_text
    from kernelevo.verify import default_device, default_size

    try:
        task = read_task(args.task)
    except TaskError as exc:
        raise UserError(str(exc)) from exc
    for c in args.candidates:  # every one readable before anything is timed
        try:
            read_text(c, "no such candidate file")
        except TextFileError as exc:
            raise UserError(str(exc)) from exc
    device = default_device()
    size = args.size or default_size(device)
    if size == "small" and not task.hints.get("SMALL"):
        size = "default"
    mode = None if args.no_compile else ("max-autotune" if args.max_autotune else "default")
    timing_timeout = args.timeout or (900.0 if args.max_autotune else 300.0)
    report: dict[str, Any] = {
        "task": str(args.task),
        "device": device,
        "size": size,
        "compile_mode": mode,
        "speed_measured": device == "cuda",
        "rows": [],
    }
    with Evaluator(device) as ev:
        if device == "cuda":
            from kernelevo.judge.timing_check import measure_reference

            reply = measure_reference(
                task, ev, size, args.seed, mode, args.max_time, timing_timeout
            )
            report["rows"] += reference_rows(reply, mode)
            report["device_info"] = reply.get("device", {})
        for path in args.candidates:
            report["rows"].append(
                _candidate_row(ev, args, task, Path(path), device, size, mode, timing_timeout)
            )
    if args.json:
        json.dump(report, sys.stdout, default=str)
        sys.stdout.write("\n")
    else:
        print(format_table(report))
    if device != "cuda":
        print(NO_GPU, file=sys.stderr)
        return 2
    ok = all(r["status"] == "verified" and r.get("median_ms") is not None for r in report["rows"])
    return 0 if ok else 1


def _candidate_row(
    ev: Any,
    args: argparse.Namespace,
    task: Any,
    path: Path,
    device: str,
    size: str,
    mode: str | None,
    timeout: float,
) -> dict[str, Any]:
    from kernelevo.task import TaskError
    from kernelevo.verify import verify_candidate

    try:
        verdict = verify_candidate(
            task,
            path,
            evaluator=ev,
            device=device,
            size=size,
            timeout=args.timeout,
            seed=args.seed,
            use_cache=False,
            measure=True,
            compile_mode=mode,
            max_time_s=args.max_time,
        )
    except TaskError as exc:
        raise UserError(str(exc)) from exc
    row: dict[str, Any] = {
        "name": path.stem,
        "kind": "candidate",
        "path": str(path),
        "status": verdict.status,
        "reason": verdict.reason,
        "backend": verdict.backend,
    }
    if verdict.timings and device == "cuda":
        row.update(candidate_timing({"timings": verdict.timings, "roofline": verdict.roofline}))
    row["verdict"] = verdict.to_dict()
    return row


def _rate(rl: dict[str, Any], ms: float | None) -> dict[str, Any]:
    """Achieved throughput and fraction of the roofline floor for a time, from a measured roofline."""
    if not ms or not rl or not rl.get("bytes"):
        return {
            "achieved_gbps": None,
            "achieved_tflops": None,
            "bound": None,
            "roofline_fraction": None,
        }
    flops = rl.get("flops")
    floors = []
    if rl.get("peak_gbps"):
        floors.append(rl["bytes"] / (rl["peak_gbps"] * 1e9) * 1e3)
    if flops and rl.get("peak_tflops"):
        floors.append(flops / (rl["peak_tflops"] * 1e12) * 1e3)
    return {
        "achieved_gbps": rl["bytes"] / (ms * 1e-3) / 1e9,
        "achieved_tflops": flops / (ms * 1e-3) / 1e12 if flops else None,
        "bound": rl.get("bound"),
        "roofline_fraction": max(floors) / ms if floors else None,
    }


def reference_rows(reply: dict[str, Any], mode: str | None) -> list[dict[str, Any]]:
    """Rows for eager and torch.compile from a measure reply whose candidate is the reference itself."""
    if "error" in reply:
        return [
            {
                "name": "eager (reference)",
                "kind": "reference",
                "status": "runtime_error",
                "reason": f"timing the reference failed: {reply['error']}",
                "median_ms": None,
            }
        ]
    t, rl = reply["timings"], reply["roofline"]
    detail = t.get("detail", {})
    eager, comp = t.get("eager_ms"), t.get("compile_ms")
    rows = [
        {
            "name": "eager (reference)",
            "kind": "reference",
            "status": "verified",
            "reason": "the task's Model",
            "median_ms": eager,
            "spread": detail.get("eager", {}).get("spread"),
            "graph_ms": detail.get("eager", {}).get("graph_ms"),
            "speedup_eager": 1.0,
            "speedup_compile": comp / eager if comp and eager else None,
            **_rate(rl, eager),
        }
    ]
    if mode:
        if comp:
            rows.append(
                {
                    "name": f"torch.compile ({mode})",
                    "kind": "compile",
                    "status": "verified",
                    "reason": "torch.compile of the task's Model",
                    "median_ms": comp,
                    "spread": detail.get("compile", {}).get("spread"),
                    "graph_ms": detail.get("compile", {}).get("graph_ms"),
                    "speedup_eager": eager / comp if eager else None,
                    "speedup_compile": 1.0,
                    **_rate(rl, comp),
                }
            )
        else:
            rows.append(
                {
                    "name": f"torch.compile ({mode})",
                    "kind": "compile",
                    "status": "runtime_error",
                    "reason": t.get("compile_error") or "torch.compile failed",
                    "median_ms": None,
                }
            )
    return rows


def candidate_timing(reply: dict[str, Any]) -> dict[str, Any]:
    """Row fields for a timed candidate; a time below the physical floor makes it rejected."""
    t, rl = reply["timings"], reply["roofline"]
    cand = t.get("candidate_ms")
    detail = t.get("detail", {}).get("candidate", {})
    row: dict[str, Any] = {
        "median_ms": cand,
        "spread": detail.get("spread"),
        "graph_ms": detail.get("graph_ms"),
        "eager_ms": t.get("eager_ms"),
        "compile_ms": t.get("compile_ms"),
        "speedup_eager": t.get("speedup_eager"),
        "speedup_compile": t.get("speedup_compile"),
        **_rate(rl, cand),
    }
    if t.get("implausible"):
        row.update(status="rejected", reason=t["implausible"])
    return row


def _fmt(value: Any, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def _achieved(row: dict[str, Any]) -> str:
    if row.get("bound") == "compute" and row.get("achieved_tflops") is not None:
        return f"{row['achieved_tflops']:.1f} TFLOP/s"
    if row.get("achieved_gbps") is not None:
        return f"{row['achieved_gbps']:.0f} GB/s"
    return "-"


def format_table(report: dict[str, Any]) -> str:
    head = [
        "name",
        "status",
        "median ms",
        "spread",
        "vs eager",
        "vs compile",
        "achieved",
        "roofline",
    ]
    lines = []
    for r in report["rows"]:
        lines.append(
            [
                r["name"],
                r["status"],
                _fmt(r.get("median_ms"), ".4f"),
                _fmt(r.get("spread"), ".1%"),
                _fmt(r.get("speedup_eager"), ".2f", "x"),
                _fmt(r.get("speedup_compile"), ".2f", "x"),
                _achieved(r),
                _fmt(r.get("roofline_fraction"), ".0%"),
            ]
        )
    out = [
        f"{report['task']} on {report.get('device_info', {}).get('name') or report['device']} "
        f"({report['size']} shapes; torch.compile: {report['compile_mode'] or 'off'})"
    ]
    out += render([head, *lines])
    notes = [f"  {r['name']}: {r['reason']}" for r in report["rows"] if r["status"] != "verified"]
    if notes:
        out.append("not verified:")
        out += notes
    return "\n".join(out)
