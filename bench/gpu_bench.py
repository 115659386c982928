"""Every benchmark in one run, and docs/BENCHMARKS.md's current table from what each printed.

Each benchmark prints its figures last; the table keeps that last line (the whole output goes
to $OUT/<name>.txt), with the date, the GPU, the commit and the command, so a figure in the docs
always names the run it came from. Earlier tables are kept in docs/benchmarks-history/.

    source bench/gpu_env.sh && python3 bench/gpu_bench.py             # on the GPU machine
    python3 bench/gpu_bench.py --only offline_suite,timing_fidelity   # a part of it
    python3 bench/gpu_bench.py --table $OUT/gpu_bench.json --write    # the table from a run, into the docs
    python3 bench/gpu_bench.py --table docs/benchmarks-history/gpu-bench/*/gpu_bench.json --write
                                  # runs of parts of the set: the newest row of each benchmark

`make gpu-bench` runs it with --write; `--only` splits the set into runs that fit a GPU
machine's time limit per run. A benchmark with `gpus=0` runs on any machine; one whose package is
missing (the GPU image has no pygls or anthropic) is a "not run" row, not a failure.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "BENCHMARKS.md"
sys.path.insert(0, str(ROOT))

from kernelevo.measure.gpus import scan as scan_gpus  # noqa: E402

BEGIN, END = "<!-- gpu-bench: begin -->", "<!-- gpu-bench: end -->"


@dataclass(frozen=True)
class Bench:
    name: str
    command: str  # run in the repository root; $OUT is the run's output folder
    limit_s: int
    gpus: int = 1  # how many GPUs it needs (0: any machine)
    needs: tuple[str, ...] = ()  # Python packages it imports that a GPU image may lack


BENCHES = (
    Bench(
        "gpu_tests",
        "python3 -m pytest -q -m 'gpu and not gpu_alone' -p no:cacheprovider --timeout 150 -n 8"
        " --dist load tests/gpu tests/test_offline_inductor.py tests/test_offline_inductor_configs.py"
        " tests/test_offline_templates.py tests/test_targets_capture.py"
        " ; s=$?; python3 -m pytest -q -m gpu_alone -p no:cacheprovider --timeout 150 tests/gpu && exit $s",
        330,
    ),
    Bench(
        "adversarial",
        "python3 -m pytest -q -p no:cacheprovider --timeout 200 -n 4 --dist loadfile tests/adversarial",
        240,
    ),
    Bench(
        "judge_adversarial",
        "python3 -m pytest -q -p no:cacheprovider --timeout 150 tests/test_judge_adversarial.py",
        240,
    ),
    Bench("sandbox_gpu_check", "python3 bench/sandbox_gpu_check.py", 120),
    Bench("cuda_ipc_sandbox", "python3 bench/cuda_ipc_sandbox.py", 60),
    Bench("offline_suite", "python3 bench/offline_suite.py --tune-evals 4", 300),
    Bench(
        "inductor_launch_configs",
        "python3 bench/inductor_launch_configs.py --out $OUT/inductor_launch_configs",
        300,
    ),
    Bench(
        "timing_fidelity", "python3 bench/timing_fidelity.py --out $OUT/timing_fidelity.json", 150
    ),
    Bench(
        "eval_latency",
        "python3 bench/eval_latency.py --device cuda --out $OUT/eval_latency.json",
        150,
    ),
    Bench(
        "shell_latency",
        "python3 bench/eval_latency.py --shell --goals-first --no-inline --repeat 2 --budget-s 180"
        " --out $OUT/shell_latency.json",
        240,
    ),
    Bench(
        "profile_verdict",
        "python3 bench/profile_verdict.py --out $OUT/profile --top 15 --budget-s 80",
        110,
    ),
    Bench("sandbox_latency", "python3 bench/sandbox_latency.py --device cuda --repeat 5", 240),
    Bench("worker_start", "python3 bench/worker_start.py --device cuda --repeat 3", 150),
    Bench(
        "replay",
        "python3 bench/replay.py --lanes 3 --time-s 0.6 --budget-s 250 --out $OUT/replay",
        300,
    ),
    Bench(
        # load_inline kernels (40-70 s a build, 8 side by side): a spread of the fastest per problem
        "replay_leaderboard",
        "python3 bench/replay.py --source leaderboard --per-task 1 --sample 40 --lanes 3"
        " --budget-s 480 --out $OUT/replay_leaderboard",
        540,
    ),
    Bench(
        # the published profiler's protocol on the kernels a replay timed (its record in the docs)
        "authors_timing",
        "python3 bench/authors_timing.py --rows"
        " docs/benchmarks-history/2026-12-06-replay-ec1c2ea-h100.json --out $OUT/authors_timing.json",
        300,
    ),
    Bench("cuda_compile", "python3 bench/cuda_compile.py", 60),
    Bench("cuda_launch", "python3 bench/cuda_launch.py", 60),
    Bench("triton_first_launch", "python3 bench/triton_first_launch.py --repeat 5", 90),
    Bench("faults", "python3 bench/faults.py --quick --device cuda --out $OUT/faults.json", 120),
    Bench(
        "search_throughput",
        # a window of 120 s: one of 55 s measured the start's first wave, not the steady state
        "python3 bench/search_throughput.py --device cuda --modes new --wall-s 120 --reply-s 20"
        " --slots-per-gpu 1,2,4 --saturate 0 --out $OUT/throughput.json",
        540,
    ),
    Bench(
        # a 2.7 ms candidate (KernelBench L1-14 as published): timing is a larger share of a verdict;
        # 90 s per search: in 45 s four slots take the first wave of replies and then wait;
        # 4 and 8 slots: what stepping aside for a waiting timing gives (bench/gate_model.py)
        "search_throughput_long",
        "python3 bench/search_throughput.py --device cuda --modes new --wall-s 90 --reply-s 20"
        " --slots-per-gpu 4,8 --saturate 8"
        " --task bench/replay/tasks/kbf/level_1/14_Matmul_for_upper_triangular_matrices.py"
        " --kernel bench/replay/kbf/level_1/task_14.py --out $OUT/throughput_long",
        420,
    ),
    Bench(
        # one runner host a slot against two taking turns (the spare's CUDA start off the verdict),
        # at the machine's default slots (where the spare's start was a quarter of a verdict)
        "runner_turns",
        "python3 bench/search_throughput.py --device cuda --modes new --wall-s 60 --reply-s 20"
        " --slots-per-gpu auto --runner-hosts 1,2 --saturate 0"
        " --task bench/replay/tasks/kbf/level_1/14_Matmul_for_upper_triangular_matrices.py"
        " --kernel bench/replay/kbf/level_1/task_14.py --out $OUT/runner_turns",
        300,
    ),
    Bench(
        "judge_memory",
        "python3 bench/judge_memory.py --device cuda --budget-s 200 --out $OUT/memory"
        ' ${MEM_TASKS:+--tasks "$MEM_TASKS"}',
        240,
    ),
    Bench(
        "judge_memory_file",
        "python3 bench/judge_memory.py --device cuda --via file --budget-s 40 --out $OUT/memory_file"
        " --tasks L1_45_,L1_38_,L1_39_,L1_87_",
        80,
    ),
    Bench("scale", "python3 bench/scale.py --device cuda --out $OUT/scale.json", 150, gpus=2),
    Bench("detect_speed", "python3 bench/detect_speed.py", 60, gpus=0),
    Bench("lsp_latency", "python3 bench/lsp_latency.py", 180, gpus=0, needs=("pygls",)),
    Bench(
        "tokens_per_improvement",
        'PYTHONPATH="${BENCH_LLM_SITE:+$BENCH_LLM_SITE:}$PYTHONPATH"'
        " python3 bench/tokens_per_improvement.py --iterations 6 --device cuda"
        " $([ -d .old-tree ] && echo --old-tree .old-tree) --out $OUT/tokens.json",
        600,
    ),
)


@dataclass
class Result:
    name: str
    command: str
    rc: int | None  # None: not run (say why in `figures`)
    seconds: float
    figures: str


SUMMARY = re.compile(r"^=*\s*\d+ (passed|failed|errors?|skipped|deselected)\b.* in [\d.]+s")


def summaries(text: str) -> list[str]:
    """Each pytest session's summary line in an output, in order."""
    return [line.strip().strip("= ") for line in text.splitlines() if SUMMARY.match(line.strip())]


def last_line(text: str) -> str:
    """A benchmark's figures: its last printed line, or for a command of several pytest sessions
    each session's summary line (the last alone would hide the first session's counts)."""
    found = summaries(text)
    if len(found) > 1:
        return " · ".join(found)[:400]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "(printed nothing)"


def gpu_count() -> int:
    return len(scan_gpus().gpus)


def run(bench: Bench, out: Path, gpus: int) -> Result:
    if gpus < bench.gpus:
        return Result(bench.name, bench.command, None, 0.0, f"not run: needs {bench.gpus} GPUs")
    # `python3` in a command is the interpreter running this (the venv's under `make gpu-bench`)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "OUT": str(out), "PYTHONUNBUFFERED": "1", "PATH": path}
    missing = [m for m in bench.needs if not _importable(m, env)]
    if missing:
        why = f"not run: no {', '.join(missing)} here (put its wheel in .device-wheels beside the checkout)"
        return Result(bench.name, bench.command, None, 0.0, why)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            ["bash", "-c", bench.command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=bench.limit_s,
        )
        rc, text = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, text = 124, _text(exc.stdout) + _text(exc.stderr) + f"\nran past {bench.limit_s} s"
    (out / f"{bench.name}.txt").write_text(text)
    figure = last_line(proc.stdout if rc == 0 else text) if rc != 124 else last_line(text)
    return Result(bench.name, bench.command, rc, time.monotonic() - t0, figure)


def _importable(module: str, env: dict[str, str]) -> bool:
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run(["python3", "-c", probe], cwd=ROOT, env=env).returncode == 0


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""


def machine() -> dict[str, str]:
    """What the table names: the GPU (or none), the commit, the date. KERNELEVO_COMMIT, where
    set, names the commit: a checkout copied to a GPU machine may carry stale git metadata."""
    gpu = "; ".join(f"{g.name}, {g.driver}" for g in scan_gpus().gpus)
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": gpu or "no GPU found",
        "commit": os.environ.get("KERNELEVO_COMMIT") or commit or "unknown",
    }


def table(info: dict[str, str], results: list[Result]) -> str:
    rows = [
        f"Run of {info['date']} on {info['gpu']}, commit {info['commit']}: "
        f"`python3 bench/gpu_bench.py{info.get('args', '')}` (outputs in $OUT/<benchmark>.txt).",
        "",
        "| benchmark | command | exit | s | figures (its last line) |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        rows.append(f"| {r.name} | `{r.command}` | {_cells(r)} |")
    return "\n".join(rows) + "\n"


def merged_table(runs: list[tuple[dict[str, str], list[Result]]]) -> str:
    """The table of several runs (each a part of the set, `--only`): a benchmark's row from the
    newest run that has it, each row naming its run."""
    if len(runs) == 1:
        return table(*runs[0])
    latest: dict[str, tuple[dict[str, str], Result]] = {}
    for info, results in sorted(runs, key=lambda run: run[0]["date"]):
        for r in results:
            latest[r.name] = (info, r)
    rows = [
        f"The newest row of each benchmark from {len(runs)} runs of `python3 bench/gpu_bench.py "
        "--only ...` (outputs in each run's $OUT/<benchmark>.txt).",
        "",
        "| benchmark | run (date, GPU, commit) | command | exit | s | figures (its last line) |",
        "|---|---|---|---|---|---|",
    ]
    order = [b.name for b in BENCHES]
    for name in sorted(latest, key=lambda n: order.index(n) if n in order else len(order)):
        info, r = latest[name]
        run = f"{info['date']}, {info['gpu']}, {info['commit']}".replace("|", "\\|")
        rows.append(f"| {name} | {run} | `{r.command}` | {_cells(r)} |")
    return "\n".join(rows) + "\n"


def _cells(r: Result) -> str:
    cell = r.figures.replace("|", "\\|")
    return f"{'-' if r.rc is None else r.rc} | {r.seconds:.0f} | {cell}"


def load_run(path: Path) -> tuple[dict[str, str], list[Result]]:
    """A saved run; a result whose output lies beside it gets its figures read again from that
    output (a run saved before a command's figures kept every pytest session's counts)."""
    saved = json.loads(path.read_text())
    results = []
    for r in saved["results"]:
        result = Result(**r)
        output = path.parent / f"{result.name}.txt"
        if output.is_file() and len(summaries(output.read_text(errors="replace"))) > 1:
            result.figures = last_line(output.read_text(errors="replace"))
        results.append(result)
    return saved["machine"], results


def write_doc(text: str, doc: Path = DOC) -> None:
    """Replace the current table between the markers; the rest of the page is left as it is."""
    page = doc.read_text()
    if BEGIN not in page or END not in page:
        raise SystemExit(f"{doc}: no {BEGIN} ... {END} markers; add them where the table goes")
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(f"{head}{BEGIN}\n{text}{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated benchmark names (default: all)")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/kernelevo-out"))
    ap.add_argument("--write", action="store_true", help="put the table into docs/BENCHMARKS.md")
    ap.add_argument(
        "--table",
        nargs="+",
        help="gpu_bench.json files of earlier runs: make their table only (the newest row of each)",
    )
    ap.add_argument("--list", action="store_true", help="print the benchmarks and exit")
    args = ap.parse_args(argv)
    if args.list:
        for b in BENCHES:
            print(f"{b.name:<18} {b.limit_s:>4} s  {b.gpus} GPU  {b.command}")
        return 0
    if args.table:
        runs = [load_run(Path(f)) for f in args.table]
        results = [r for _, rs in runs for r in rs]
        text = merged_table(runs)
    else:
        names = {n.strip() for n in args.only.split(",")} if args.only else None
        unknown = (names or set()) - {b.name for b in BENCHES}
        if unknown:
            print(f"unknown benchmark {', '.join(sorted(unknown))}; --list names them")
            return 2
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        gpus = gpu_count()
        info = machine()
        if args.only:
            info["args"] = f" --only {shlex.quote(args.only)}"
        results = []
        for bench in BENCHES:
            if names is None or bench.name in names:
                print(f"=== {bench.name} ({time.strftime('%H:%M:%S')})", flush=True)
                results.append(run(bench, out, gpus))
                print(f"    exit {results[-1].rc}: {results[-1].figures}", flush=True)
        (out / "gpu_bench.json").write_text(
            json.dumps({"machine": info, "results": [asdict(r) for r in results]}, indent=1)
        )
        text = table(info, results)
    if args.write:
        write_doc(text)
    print(text)
    return 0 if all(r.rc in (0, None) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
