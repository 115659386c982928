"""Build the replay corpus under bench/replay/ from public repositories (run once, on a machine
that has their git mirrors; the result is checked in with its manifest).

Sources (each a bare git directory, e.g. `git clone --mirror`):
- pavanyellow/KernelBenchFiltered: METR's filtered KernelBench, the best agent solution per task
  with its speedup (H100) in a header comment, and the task files those solutions were judged on.
- ScalingIntelligence/KernelBench: the adversarial kernels its unit tests require to fail
  (src/kernelbench/unit_tests/test_kernels/) and the level-1 task they are run against.
- anneouyang/KernelBenchLeaderboard ("Kernelsseum"): the top five solutions per KernelBench problem
  of seven models, each listed with its speedup over PyTorch on an L40S (KernelBench measures a
  speedup only for a kernel its correctness checks passed), beside the problem file it was judged on.

A solution names its class `Model`; the copy renames it `ModelNew` (the only change), so a
corpus file is the author's kernel as judged. Usage:
python bench/replay_corpus.py KBF_GIT KB_GIT [LEADERBOARD_GIT]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "replay"
HEADER = re.compile(r"#\s*level (\d+) index (\d+) agent name: (.+?)\s+speedup: ([\d.]+)x")
KBF_LICENCE = "no licence file in the repository (tasks derive from KernelBench, MIT)"


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True
    ).stdout


def backend_of(src: str) -> str:
    if "triton.jit" in src:
        return "triton"
    return "cuda_inline" if "load_inline" in src else "none"


def as_candidate(src: str) -> str:
    return re.sub(r"\bModel\b", "ModelNew", src)


def write(rel: str, text: str) -> str:
    path = OUT / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return rel


def kbf(repo: str, entries: list[dict], tasks: dict[str, str]) -> None:
    commit = git(repo, "rev-parse", "HEAD").strip()
    files = git(repo, "ls-tree", "-r", "--name-only", "HEAD").split()
    task_files = {
        (int(f.split("/")[1].split("_")[1]), int(Path(f).name.split("_")[0])): f
        for f in files
        if f.startswith("tasks/level_") and f.endswith(".py") and Path(f).name[0].isdigit()
    }
    per_backend = {"triton": 0, "cuda_inline": 0, "none": 0}
    limits = {"triton": 200, "cuda_inline": 6, "none": 8}
    for f in sorted(
        files,
        key=lambda f: (
            f.count("/"),
            f.split("/")[1] if "/" in f else "",
            int(re.sub(r"\D", "", Path(f).stem) or 0),
        ),
    ):
        if not (f.startswith("best_agent_solutions/level_") and f.endswith(".py")):
            continue
        src = git(repo, "show", f"HEAD:{f}")
        m = HEADER.search(src.splitlines()[0] if src else "")
        level = int(f.split("/")[1].split("_")[1])
        if not m or level not in (1, 2):
            continue
        task_id = int(m.group(2))
        backend = backend_of(src)
        if per_backend[backend] >= limits[backend] or (level, task_id) not in task_files:
            continue
        per_backend[backend] += 1
        task_src = task_files[(level, task_id)]
        if task_src not in tasks:
            tasks[task_src] = write(
                f"tasks/kbf/level_{level}/{Path(task_src).name}",
                git(repo, "show", f"HEAD:{task_src}"),
            )
        entries.append(
            {
                "id": f"kbf-l{level}-{task_id}",
                "source": "pavanyellow/KernelBenchFiltered",
                "commit": commit,
                "path": f,
                "task_source_path": task_src,
                "candidate": write(f"kbf/level_{level}/task_{task_id}.py", as_candidate(src)),
                "task": tasks[task_src],
                "model": m.group(3),
                "author_verdict": "correct",
                "author_speedup": float(m.group(4)),
                "author_hardware": "H100",
                "backend": backend,
                "licence": KBF_LICENCE,
                "adapted": "class Model renamed ModelNew",
            }
        )


def kernelbench_hacks(repo: str, entries: list[dict]) -> None:
    commit = git(repo, "rev-parse", "HEAD").strip()
    task_src = "KernelBench/level1/1_Square_matrix_multiplication_.py"
    task = write(
        "tasks/kernelbench/level1/1_Square_matrix_multiplication_.py",
        git(repo, "show", f"HEAD:{task_src}"),
    )
    for name in ("non_default_stream_kernel", "result_reuse_kernel", "zero_out_kernel"):
        path = f"src/kernelbench/unit_tests/test_kernels/{name}.py"
        entries.append(
            {
                "id": f"kb-hack-{name}",
                "source": "ScalingIntelligence/KernelBench",
                "commit": commit,
                "path": path,
                "task_source_path": task_src,
                "candidate": write(f"kernelbench/{name}.py", git(repo, "show", f"HEAD:{path}")),
                "task": task,
                "model": "hand-written adversarial kernel",
                "author_verdict": "incorrect",
                "author_speedup": None,
                "author_hardware": "-",
                "backend": "cuda_inline",
                "licence": "MIT",
                "adapted": "none",
            }
        )


def leaderboard(repo: str, entries: list[dict]) -> None:
    """Every listed solution, ranked as the page ranks them (r1 fastest), with its problem file."""
    commit = git(repo, "rev-parse", "HEAD").strip()
    ranking = json.loads(git(repo, "show", "HEAD:docs/assets/data.json"))
    for problem, solutions in ranking.items():
        m = re.fullmatch(r"Level (\d+): (\d+)_(\w*)", problem)
        if not m:
            continue
        level, pid = int(m.group(1)), int(m.group(2))
        task_src = f"docs/assets/problems/l{level}_p{pid}.py"
        task = write(
            f"tasks/leaderboard/level_{level}/{pid}_{m.group(3)}.py",
            git(repo, "show", f"HEAD:{task_src}"),
        )
        for rank, sol in enumerate(solutions, 1):
            path = f"docs/assets/solutions/{sol['file']}.py"
            src = git(repo, "show", f"HEAD:{path}")
            entries.append(
                {
                    "id": f"kbl-l{level}-{pid}-r{rank}",
                    "source": "anneouyang/KernelBenchLeaderboard",
                    "commit": commit,
                    "path": path,
                    "task_source_path": task_src,
                    "candidate": write(f"leaderboard/level_{level}/{pid}_r{rank}.py", src),
                    "task": task,
                    "model": sol["display_name"],
                    "author_verdict": "correct",
                    "author_speedup": round(float(sol["torch_speedup"]), 4),
                    "author_hardware": "L40S",
                    "backend": backend_of(src),
                    "licence": "no licence file in the repository (problems from KernelBench, MIT)",
                    "adapted": "none",
                }
            )


def main(kbf_git: str, kb_git: str, leaderboard_git: str | None = None) -> int:
    entries: list[dict] = []
    kbf(kbf_git, entries, {})
    kernelbench_hacks(kb_git, entries)
    if leaderboard_git:
        leaderboard(leaderboard_git, entries)
    (OUT / "manifest.json").write_text(json.dumps({"entries": entries}, indent=1) + "\n")
    print(
        f"{len(entries)} kernels: "
        + ", ".join(
            f"{b} {sum(e['backend'] == b for e in entries)}"
            for b in ("triton", "cuda_inline", "none")
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:4]))
