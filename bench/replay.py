"""Replay published kernels through the verifier and compare with their authors' verdicts.

The corpus (bench/replay/manifest.json, built by bench/replay_corpus.py) holds kernels whose
authors judged them correct (with a speedup measured on their GPU) or incorrect (adversarial
kernels a benchmark's tests require to fail). For each one this prints our verdict; at the end
the agreement table (author verdict x ours), every disagreement with our reason and its class,
the static allowlist count, and our speedups against the authors'.

On a GPU: `python bench/replay.py [--lanes 3] [--limit N] [--out DIR]`. Verification runs in
`--lanes` evaluators side by side (one GPU; correctness does not mind sharing it); load_inline
candidates are built first, in parallel compile workers; timing then runs alone, in one run
worker (eager baseline only, `--time-s` of measuring per kernel). Without a GPU, `--static`
runs only the static checks (milliseconds per kernel).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent / "replay"
DEFAULT_SOURCES = "KernelBenchFiltered,ScalingIntelligence"
# Authors' speedups measured on one of these are compared with ours; others (L40S) are not timed
COMPARABLE_GPUS = ("H100", "H200")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Disagreements that follow from a stated policy (docs/FORMATS.md), by what our reason says.
POLICY_CLASSES = [
    ("no kernel: ", "policy: no custom kernel (the authors accept the reference itself)"),
    ("leaves the whole reference to library calls", "policy: library-only candidate"),
    ("changes global state", "policy: candidate changes global library settings"),
    ("torch.compile is the baseline", "policy: torch.compile inside the candidate"),
    ("side streams", "policy: side stream"),
    ("is not allowed: a candidate imports only", "policy: import outside the allowlist"),
    ("passes at TF32 tolerance", "policy: TF32 against an fp32 reference (passes at TF32)"),
    ("passes at bf16 tolerance", "policy: bf16 against an fp32 reference (passes at bf16)"),
    ("calls the reference op", "policy: calls a reference op other than GEMM/conv/attention"),
    ("does not depend on any custom kernel", "policy: custom kernel's result unused"),
]


def classify(row: dict[str, Any], known: dict[str, Any]) -> str:
    reason = row["reason"]
    policy = next((label for needle, label in POLICY_CLASSES if needle in reason), None)
    note = known.get(row["id"])
    when = note.get("when", []) if isinstance(note, dict) else []
    if policy is None and any(w in reason for w in ([when] if isinstance(when, str) else when)):
        return note["class"]
    return policy or "unclassified (bug or authors' error?)"


def load(limit: int | None) -> list[dict[str, Any]]:
    entries = json.loads((ROOT / "manifest.json").read_text())["entries"]
    return entries[:limit] if limit else entries


def static_only(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from kernelevo.verify.static import check_source

    rows = []
    for e in entries:
        t0 = time.perf_counter()
        r = check_source((ROOT / e["candidate"]).read_text(), Path(e["candidate"]).name)
        rows.append(
            {
                **e,
                "status": "static-ok" if r.ok else "rejected",
                "reason": "" if r.ok else r.problems[0],
                "static_ms": (time.perf_counter() - t0) * 1e3,
            }
        )
    return rows


def build_inline(
    entries: list[dict[str, Any]], workers: int, done: dict[str, Any] | None = None
) -> dict[str, Any]:
    """load_inline candidates built side by side in compile workers (40-70 s each, one core each);
    each lands in `done` as it finishes, so verification starts on it at once."""
    from kernelevo.measure.machine import arch_env
    from kernelevo.verify.compile_ahead import precompile
    from kernelevo.verify.static import check_source
    from kernelevo.worker.pool import Worker

    todo = [
        e
        for e in entries
        if e["backend"] == "cuda_inline" and check_source((ROOT / e["candidate"]).read_text()).ok
    ]

    done = {} if done is None else done

    def one(e: dict[str, Any]) -> None:
        with Worker("compile", env=arch_env("cuda")) as w:
            done[e["id"]] = precompile(
                w,
                ROOT / e["task"],
                ROOT / e["candidate"],
                "cuda_inline",
                device="cuda",
                size="default",
                timeout=300,
            )

    if todo:
        with ThreadPoolExecutor(max(1, min(workers, len(todo)))) as pool:
            list(pool.map(one, todo))
    return done


def verify_all(
    entries: list[dict[str, Any]],
    lanes: int,
    built: Any,
    device: str = "cuda",
    deadline: float = float("inf"),
) -> list[dict[str, Any]]:
    from kernelevo.evaluate import Evaluator
    from kernelevo.task import TaskError
    from kernelevo.verify import verify_candidate

    jobs: queue.Queue[dict[str, Any]] = queue.Queue()
    for e in entries:
        jobs.put(e)
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    lock = threading.Lock()

    def lane() -> None:
        with Evaluator(device) as ev:
            ev.warm()
            while True:
                try:
                    e = jobs.get_nowait()
                except queue.Empty:
                    return
                if time.monotonic() > deadline:
                    with lock:
                        skipped.append(e["id"])
                    continue
                if (
                    e["backend"] == "cuda_inline"
                    and e["id"] not in built.done
                    and not built.finished
                ):
                    jobs.put(e)  # its build is still running
                    time.sleep(0.5)
                    continue
                t0 = time.perf_counter()
                try:
                    v = verify_candidate(
                        ROOT / e["task"],
                        ROOT / e["candidate"],
                        evaluator=ev,
                        device=device,
                        use_cache=False,
                        measure=False,
                        timeout=120,
                        precompiled=built.done.get(e["id"]),
                    )
                    failed = next((c for c in v.checks if not c.passed), None)
                    row = {
                        **e,
                        "status": v.status,
                        "reason": v.reason,
                        "kept": v.kept_library_ops,
                        "failed_detail": {
                            k: x
                            for k, x in (failed.detail if failed else {}).items()
                            if isinstance(x, (int, float, str))
                        },
                        "weights": next((c.message for c in v.checks if c.name == "weights"), ""),
                        "precision": next(
                            (c.detail for c in v.checks if c.name == "precision"), None
                        ),
                    }
                except TaskError as exc:
                    row = {**e, "status": "task_error", "reason": str(exc)}
                row["verify_s"] = round(time.perf_counter() - t0, 2)
                with lock:
                    rows.append(row)
                    print(
                        f"  {row['id']:<28} {row['status']:<14} {row['verify_s']:>6.1f} s  {row['reason'][:110]}",
                        flush=True,
                    )

    threads = [threading.Thread(target=lane) for _ in range(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if skipped:
        print(f"not verified (--budget-s ran out): {', '.join(skipped)}", flush=True)
    oom = [r for r in rows if "out of memory" in str(r.get("reason"))]
    if oom and lanes > 1 and time.monotonic() < deadline:  # the lanes share one GPU's memory
        print(f"judged again alone (out of memory beside other lanes): {len(oom)}", flush=True)
        again = {r["id"]: r for r in verify_all(oom, 1, built, device, deadline)}
        rows = [{**again[r["id"]], "judged_alone": True} if r["id"] in again else r for r in rows]
    return rows


class Builds:
    def __init__(self) -> None:
        self.done: dict[str, Any] = {}
        self.finished = False


def time_verified(rows: list[dict[str, Any]], time_s: float, deadline: float) -> None:
    """Eager vs candidate, interleaved, in one run worker with the GPU to itself."""
    from kernelevo.evaluate import Evaluator

    todo = [
        r
        for r in rows
        if (
            r["status"] == "verified"
            or (r["status"] == "incorrect" and (r.get("precision") or {}).get("level") == "tf32")
        )
        and r.get("author_hardware") in COMPARABLE_GPUS
    ]
    with Evaluator("cuda") as ev:
        for r in todo:
            if time.monotonic() > deadline:
                r["timing_skipped"] = "--budget-s ran out"
                continue
            tf32 = (r.get("precision") or {}).get("level") == "tf32"
            try:  # a full verdict with timing: the candidate in its own process, eager in the judge's
                from kernelevo.verify import verify_candidate

                v = verify_candidate(
                    ROOT / r["task"],
                    ROOT / r["candidate"],
                    evaluator=ev,
                    device="cuda",
                    size="default",
                    seed=1,
                    use_cache=False,
                    compile_mode=None,
                    max_time_s=time_s,
                    precision=("tf32",) if tf32 else (),
                    timeout=60,
                )
            except Exception as exc:  # a timing failure is reported on its row, the replay goes on
                r["timing_error"] = str(exc)[:200]
                continue
            t = v.timings or {}
            if not t:
                r["timing_error"] = f"{v.status}: {v.reason}"[:200]
                continue
            r["candidate_ms"], r["eager_ms"] = t["candidate_ms"], t["eager_ms"]
            r["speedup"] = t["eager_ms"] / t["candidate_ms"]
            detail = t.get("detail") or {}
            # which side's figure was device-wide (work seen outside the stream): a speedup's suspect
            r["escaped"] = [
                k for k in ("candidate", "eager") if (detail.get(k) or {}).get("escaped_stream")
            ]
            r["tf32_baselines"] = tf32
            if t.get("implausible"):
                r["implausible"] = t["implausible"]
            print(
                f"  timed {r['id']:<28} {r['speedup']:.2f}x (authors {r['author_speedup']}x)"
                + (f" escaped: {', '.join(r['escaped'])}" if r["escaped"] else ""),
                flush=True,
            )


def verification_order(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Builds last (they compile while the others verify); the authors' incorrect kernels first in
    each group, so a budget that runs out cannot leave the ones that must be rejected unjudged."""
    return sorted(
        entries, key=lambda e: (e["backend"] == "cuda_inline", e["author_verdict"] == "correct")
    )


def select(
    entries: list[dict[str, Any]], source: str | None, per_task: int | None, sample: int | None
) -> list[dict[str, Any]]:
    """Corpus sources (parts of their repositories' names, comma-separated, or `all`), the first
    `per_task` kernels of each task (a source ranks them), then `sample` of those spread evenly."""
    if source and source != "all":
        parts = [p.lower() for p in source.split(",")]
        entries = [e for e in entries if any(p in e["source"].lower() for p in parts)]
    if per_task:
        seen: dict[str, int] = {}
        kept = []
        for e in entries:
            seen[e["task"]] = seen.get(e["task"], 0) + 1
            if seen[e["task"]] <= per_task:
                kept.append(e)
        entries = kept
    if sample and sample < len(entries):
        entries = [entries[i * len(entries) // sample] for i in range(sample)]
    return entries


def not_run(row: dict[str, Any]) -> bool:
    """Compiled without a GPU to run it on: no verdict to compare with the authors'."""
    return row["status"] == "unverified" and (
        "compiled, not run" in row["reason"] or row["reason"].startswith("not run:")
    )


def report(rows: list[dict[str, Any]]) -> str:
    unrun = [r for r in rows if not_run(r)]
    rows = [r for r in rows if not not_run(r)]
    ours = lambda r: "pass" if r["status"] in ("verified", "static-ok") else "fail"  # noqa: E731
    lines = [
        "",
        "agreement (author verdict x ours):",
        f"{'':>12} {'ours pass':>10} {'ours fail':>10}",
    ]
    for a in ("correct", "incorrect"):
        sub = [r for r in rows if r["author_verdict"] == a]
        lines.append(
            f"{a:>12} {sum(ours(r) == 'pass' for r in sub):>10} {sum(ours(r) == 'fail' for r in sub):>10}"
        )
    dis = [r for r in rows if (r["author_verdict"] == "correct") != (ours(r) == "pass")]
    classes: dict[str, list[dict[str, Any]]] = {}
    known = json.loads((ROOT / "disagreements.json").read_text())
    for r in dis:
        classes.setdefault(
            classify(r, known)
            if r["author_verdict"] == "correct"
            else "VERIFIED AN AUTHOR-INCORRECT KERNEL",
            [],
        ).append(r)
    policy = sum(len(v) for k, v in classes.items() if k.startswith("policy:"))
    excused = sum(
        len(v) for k, v in classes.items() if k.startswith(("authors' error", "environment"))
    )
    coinciding = len(rows) - policy
    agree = sum((r["author_verdict"] == "correct") == (ours(r) == "pass") for r in rows)
    lines.append(
        f"agreement {agree}/{len(rows)} = {agree / max(len(rows), 1):.1%}; where the policies coincide "
        f"(disagreements from a stated policy left out) {agree}/{coinciding} = {agree / max(coinciding, 1):.1%}; "
        f"also leaving out the authors' errors and environment differences {agree}/{coinciding - excused} = "
        f"{agree / max(coinciding - excused, 1):.1%}"
    )
    if unrun:
        lines.append(
            f"not run (no GPU; compiled where a build was asked for): {len(unrun)}, left out of the agreement"
        )
    lines.append("disagreements by class:")
    for k, v in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {len(v):>3}  {k}")
        for r in v:
            lines.append(f"        {r['id']:<28} {r['status']:<12} {r['reason'][:150]}")
    for hardware in sorted({r.get("author_hardware", "-") for r in rows}):
        timed = timed_rows(rows, hardware)
        if timed:
            geo, within = ratio_summary([r["speedup"] / r["author_speedup"] for r in timed])
            lines.append(
                f"speedup vs eager, ours / authors' ({hardware}): geomean {geo:.3f} over "
                f"{len(timed)} kernels; {within} within +-10 %"
            )
    return "\n".join(lines)


def timed_rows(rows: list[dict[str, Any]], hardware: str) -> list[dict[str, Any]]:
    """Verified kernels timed here whose authors timed them on `hardware`: the speedups compared."""
    return [
        r
        for r in rows
        if r.get("speedup")
        and r.get("author_speedup")
        and r["status"] == "verified"
        and r.get("author_hardware") == hardware
    ]


def ratio_summary(ratios: list[float]) -> tuple[float, int]:
    """Geometric mean of speedup ratios (ours / authors'), and how many lie within ±10 %."""
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else float("nan")
    return geo, sum(0.9 <= x <= 1.1 for x in ratios)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lanes", type=int, default=3)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--only", help="comma-separated corpus ids")
    ap.add_argument(
        "--source",
        default=DEFAULT_SOURCES,
        help="corpus sources, parts of their repositories' names, comma-separated, or all "
        f"(default {DEFAULT_SOURCES}: mostly Triton, measured on an H100; `leaderboard`: 383 "
        "load_inline kernels measured on an L40S, each built for 40-70 s)",
    )
    ap.add_argument("--per-task", type=int, help="the first N kernels of each task")
    ap.add_argument("--sample", type=int, help="N kernels spread evenly over the selection")
    ap.add_argument(
        "--time-s", type=float, default=0.8, help="seconds of measuring per timed kernel"
    )
    ap.add_argument(
        "--budget-s",
        type=float,
        default=330,
        help="seconds in all: verification starts no kernel after 70 %% of it, timing none after it",
    )
    ap.add_argument("--static", action="store_true", help="static checks only (no GPU)")
    ap.add_argument(
        "--device", default="cuda", help="cpu: a smoke run in the Triton interpreter, untimed"
    )
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--unsandboxed-if-needed",
        action="store_true",
        help="where the sandbox cannot start, run unisolated (said in the output) instead of refusing",
    )
    args = ap.parse_args(argv)
    start = time.monotonic()
    if not args.static:
        from kernelevo.sandbox.probe import allow_unsandboxed, isolation

        found = isolation()
        print(
            f"isolation: {found.level}{' (' + found.reason + ')' if found.reason else ''}",
            flush=True,
        )
        if found.level != "sandbox":
            if not args.unsandboxed_if_needed:
                print(
                    "the sandbox cannot start here; pass --unsandboxed-if-needed to replay unisolated"
                )
                return 2
            allow_unsandboxed()
            os.environ["KERNELEVO_NO_SANDBOX"] = "1"
    entries = load(args.limit)
    if args.only:
        entries = [e for e in entries if e["id"] in args.only.split(",")]
    entries = select(entries, args.source, args.per_task, args.sample)
    if args.static:
        rows = static_only(entries)
    else:
        builds = Builds()

        def build() -> None:
            workers = min(12, max(2, (os.cpu_count() or 8) - 4))
            build_inline(entries, workers, builds.done)
            builds.finished = True

        builder = threading.Thread(target=build if args.device == "cuda" else lambda: None)
        builder.start()
        if args.device != "cuda":
            builds.finished = True
        rows = verify_all(
            verification_order(entries),
            args.lanes,
            builds,
            args.device,
            start + 0.7 * args.budget_s,
        )
        builder.join()
        print(f"verification done in {time.monotonic() - start:.0f} s", flush=True)
        if args.device == "cuda":
            time_verified(rows, args.time_s, start + args.budget_s)
    honest = [e for e in entries if e["author_verdict"] == "correct" and e["backend"] != "none"]
    static = {r["id"]: r for r in static_only(honest)}
    passed = sum(r["status"] == "static-ok" for r in static.values())
    text = report(rows) + (
        f"\nstatic allowlist: {passed}/{len(honest)} author-correct kernels with a kernel pass; "
        f"max {max([r['static_ms'] for r in static.values()] or [0.0]):.1f} ms per file"
    )
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "replay.json").write_text(json.dumps(rows, indent=1, default=str))
        (args.out / "replay.txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
