"""`kernelevo verify` as a user types it: a fresh process per command, what each case costs end to end.

Cases, every candidate a new nonce variant (no compile cache can hit), in one run with its own
fresh cache and state folders:
- cold shell, nothing stored: `--service off`, no baselines on disk (what every call cost before);
- cold shell, baselines stored: `--service off`, the eager/torch.compile baselines of the first
  case found on disk (kernelevo/judge/baseline_store.py): worker start and the checks remain;
- warm service: `--service on`, the service already started (its start is reported apart);
- load_inline, cold build through the warm service: the ratio's denominator, as in eval_latency.py.
Wall time is measured around the subprocess (interpreter start included); each row also shows the
transport (CUDA IPC or files) and the verdict's own phases. `--goals-first` runs the goal cases first
(the service's first call stores the baselines the cold shell then finds) and `--budget-s` starts
no case past a device call's limit.

Goals on a GPU: Triton p50 <= 5 s from a cold shell (CUDA fast path <= 10 s), <= 1 s
with the service warm. On a CPU the figures are verification only (no timing) and not judged.

Usage: python bench/eval_latency.py --shell [--repeat 3] [--no-inline]   (or this file directly)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_latency import TASK, write_variant  # noqa: E402
from report import goal, p50, table  # noqa: E402

GOALS_S = {
    ("triton", "cold shell, baselines stored"): 5.0,
    ("cuda", "cold shell, baselines stored"): 10.0,
    ("triton", "warm service"): 1.0,
    ("cuda", "warm service"): 1.0,
}


def shell_verdict(
    cand: Path, service: str, env: dict[str, str], device: str, timeout: float = 900
) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "kernelevo", "verify", str(TASK), str(cand), "--json"]
    cmd += ["--no-cache", "--service", service, "--device", device]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=env["WS"])
    wall = time.perf_counter() - t0
    try:
        v = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        v = {"status": f"exit {r.returncode}", "reason": r.stderr.strip()[-200:]}
    t = v.get("timings") or {}
    phases = t.get("phases") or {}
    verify = v.get("phases") or {}
    return {
        "wall_s": wall,
        "status": v.get("status"),
        "reason": str(v.get("reason"))[:160],
        "inside_s": v.get("elapsed_s"),
        "baselines_stored": phases.get("baselines_stored"),
        "baselines_s": phases.get("baselines_s"),
        "transport": verify.get("transport"),
        "phases": {  # where the seconds inside went (bench/profile_verdict.py has the full table)
            k: verify.get(k)
            for k in (
                "cuda_ipc",  # why CUDA IPC was given up, where it was
                "worker_start_s",  # a cold shell's workers, each
                "worker_start_parts_s",  # each start: sandbox, python (imports), preload/warm-up
                "worker_wait_s",  # how long the verdict waited for each worker
                "task_probe_s",
                "precompile_s",
                "probe_s",
                "load_s",
                "checks_s",
                "total_s",
                "per_set_s",  # each input set's seconds
                "judge_ops_s",  # seconds per judge request, round trips included
                "candidate_ops_s",  # the same for the candidate process's requests
                "cleanup_s",
                "launchers",  # Triton launchers the judge built or found for this candidate
                "built_in_run",  # what the candidate process still had to build itself
            )
            if verify.get(k) is not None
        }
        | ({"timing_s": t.get("measure_s")} if t.get("measure_s") is not None else {}),
    }


def run(
    device: str, repeat: int, inline: bool, budget_s: float = 0, goals_first: bool = False
) -> dict[str, Any]:
    """`budget_s`: start no case past this many seconds (a device call's limit); 0: no limit.
    `goals_first`: the goal cases (warm service, cold shell with baselines stored) first."""
    root = Path(tempfile.mkdtemp(prefix="kernelevo-shell-latency-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    for name, sub in (
        ("TRITON_CACHE_DIR", "triton"),
        ("KERNELEVO_CACHE", "kernelevo"),
        ("TORCH_EXTENSIONS_DIR", "ext"),
        ("KERNELEVO_STATE", "state"),
        ("KERNELEVO_RUN_DIR", "run"),
        ("WS", "ws"),
    ):
        # build caches as `kernelevo` makes them (0755: the sandboxes' own uids read them), the
        # state, run and workspace folders private
        caches = ("TRITON_CACHE_DIR", "KERNELEVO_CACHE", "TORCH_EXTENSIONS_DIR")
        (root / sub).mkdir(mode=0o755 if name in caches else 0o700)
        env[name] = str(root / sub)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    work = root / "candidates"
    work.mkdir()
    rows: list[dict[str, Any]] = []

    began = time.perf_counter()

    def case(backend: str, kind: str, service: str, n: int) -> None:
        for _ in range(n):
            if budget_s and time.perf_counter() - began > budget_s:
                print(f"  {kind:30} {backend:7} not run: the {budget_s:g} s budget is spent")
                return
            if "nothing stored" in kind:
                shutil.rmtree(env["KERNELEVO_STATE"])
                Path(env["KERNELEVO_STATE"]).mkdir(mode=0o700)
            row = {
                "backend": backend,
                "case": kind,
                **shell_verdict(write_variant(work, backend), service, env, device),
            }
            rows.append(row)
            print(
                f"  {kind:30} {backend:7} {row['status']:13} {row['wall_s']:7.2f} s  "
                f"inside {row['inside_s']}  stored baselines {row['baselines_stored']}  {row['transport']}  "
                f"{row['phases']}  "
                f"{row['reason'][:60]}",
                flush=True,
            )

    print(f"kernelevo verify from a shell on {device}; caches and state in {root}", flush=True)
    # the cases a call cut short by its time limit most needs come first
    if goals_first:  # the service's first call stores the baselines the cold shell then finds
        t0 = time.perf_counter()
        case("triton", "service start (first call)", "on", 1)
        start_s = time.perf_counter() - t0
        case("triton", "warm service", "on", repeat + 1)
        case("triton", "cold shell, baselines stored", "off", repeat)
        case("cuda", "warm service", "on", repeat + 1)
        case("triton", "cold shell, nothing stored", "off", 1)
    else:
        case("triton", "cold shell, nothing stored", "off", 1)
        case("triton", "cold shell, baselines stored", "off", repeat)
        t0 = time.perf_counter()
        case("triton", "service start (first call)", "on", 1)
        start_s = time.perf_counter() - t0
        for backend in ("triton", "cuda"):
            case(backend, "warm service", "on", repeat + 1)
    case("cuda", "cold shell, nothing stored", "off", 1)
    case("cuda", "cold shell, baselines stored", "off", repeat)
    if inline:
        case("inline", "load_inline cold, warm service", "on", 1)
    stop = subprocess.run(  # answered once the service's workers are gone
        [
            sys.executable,
            "-c",
            "from kernelevo import service; "
            f"print(service.request({env['WS']!r}, {device!r}, service.Stop(), 60))",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=env["WS"],  # the code the verify calls (run there) imported
    )
    if "stopped=True" not in stop.stdout:
        print(f"  the service did not stop: {(stop.stdout + stop.stderr).strip()[-200:]}")
    shutil.rmtree(root, ignore_errors=True)
    return summarize(rows, device, start_s)


def summarize(rows: list[dict[str, Any]], device: str, start_s: float) -> dict[str, Any]:
    keys = sorted(
        {(r["backend"], r["case"]) for r in rows},
        key=lambda k: [r["case"] for r in rows].index(k[1]),
    )
    stats: dict[str, dict[str, Any]] = {
        f"{b} | {c}": {
            "n": len(sel),
            "p50_s": p50([r["wall_s"] for r in sel]),
            "statuses": sorted({str(r["status"]) for r in sel}),
        }
        for b, c in keys
        for sel in [[r for r in rows if (r["backend"], r["case"]) == (b, c)]]
    }
    inline = stats.get("inline | load_inline cold, warm service")
    if inline and set(inline["statuses"]) & {"timeout", "compile_error", "runtime_error"}:
        print(f"the load_inline build did not finish ({inline['statuses']}): no ratio")
        inline = None
    print()
    print(
        table(
            ["case", "n", "p50 s", "statuses", "cold load_inline / this"],
            [
                [
                    k,
                    s["n"],
                    s["p50_s"],
                    ",".join(s["statuses"]),
                    round(inline["p50_s"] / s["p50_s"], 1) if inline and s["p50_s"] else None,
                ]
                for k, s in stats.items()
            ],
        )
    )
    goals = []
    for (backend, kind), limit in GOALS_S.items():
        s = stats.get(f"{backend} | {kind}")
        if s:
            ok = s["p50_s"] <= limit and s["statuses"] == ["verified"]
            goals.append(
                goal(
                    f"{backend} {kind} p50 <= {limit:g} s",
                    ok if device == "cuda" else None,
                    f"p50 {s['p50_s']:.2f} s, statuses {s['statuses']}",
                )
            )
    return {
        "bench": "shell_latency",
        "device": device,
        "rows": rows,
        "stats": stats,
        "service_start_s": start_s,
        "goals": goals,
    }


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-inline", action="store_true")
    p.add_argument("--device", choices=["cpu", "cuda"])
    p.add_argument("--out")
    p.add_argument("--budget-s", type=float, default=0, help="start no case past this many s")
    p.add_argument(
        "--goals-first", action="store_true", help="warm service, stored baselines first"
    )
    a = p.parse_args()
    from kernelevo.verify import default_device

    data = run(a.device or default_device(), a.repeat, not a.no_inline, a.budget_s, a.goals_first)
    if a.out:
        Path(a.out).write_text(json.dumps(data, indent=1, default=str))
