"""bench/offline_suite.py's bookkeeping: the KernelBench corpus it runs, shards, resumable rows
and the totals it prints (what KernelEvo ships, tasks without a reason)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("offline_suite", REPO / "bench" / "offline_suite.py")
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)


def test_the_corpus_is_kernelbench_level1_and_level2_with_its_source_noted() -> None:
    tasks = suite.find_tasks("kernelbench", [])
    names = [suite.task_name(t) for t in tasks]
    assert len(tasks) >= 50 and len(set(names)) == len(names)
    assert (
        sum(n.startswith("L1_") for n in names) >= 20
        and sum(n.startswith("L2_") for n in names) >= 20
    )
    assert names[0].startswith("L1_") and names[1].startswith("L2_")  # levels alternate
    manifest = (REPO / "bench" / "kernelbench" / "MANIFEST").read_text()
    assert "129232ea3c4cfa05c2dd5473bdb935d6246dc84b" in manifest and "MIT" in manifest
    for task in tasks:
        assert (
            f"{task.parent.name}/{task.name} -> KernelBench/{task.parent.name}/{task.name}"
            in manifest
        )


def test_shards_split_the_tasks_without_overlap() -> None:
    tasks = suite.find_tasks("kernelbench", [])
    parts = [suite.shard(tasks, f"{i}/3") for i in range(3)]
    assert sorted(p for part in parts for p in part) == sorted(tasks)


def _row(
    task: str, eager: float, compile_: float, best: float | None, proposed: bool, **extra
) -> dict:
    return {
        "task": task,
        "eager_ms": eager,
        "compile_ms": compile_,
        "best_ms": best,
        "proposed": proposed,
        "speedup_eager": eager / best if best else None,
        "speedup_compile": compile_ / best if best else None,
        "origin": "inductor",
        "evaluations": 1,
        "notes": [],
        "reason": "",
        "elapsed_s": 1.0,
        **extra,
    }


def test_totals_count_what_ships_and_the_tasks_without_a_reason(tmp_path: Path) -> None:
    rows = [
        _row("a", 2.0, 1.0, 0.5, True),
        _row("b", 1.0, 0.5, 0.8, False),
        _row("c", 1.0, 1.0, None, False, evaluations=0),
        _row(
            "d", 1.0, 1.0, None, False, evaluations=0, notes=["templates: no template for cumsum"]
        ),
    ]
    lines = "\n".join(suite.summary(rows, "cuda"))
    # shipped, kernel else the user's code: 4x, 1x, 1x, 1x; kernel else the better baseline: 4x, 2x, 1x, 1x
    assert f"user's code {4**0.25:.2f}x" in lines and f"better baseline {8**0.25:.2f}x" in lines
    assert "without candidates and without a reason: ['c']" in lines
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [r["task"] for r in suite.read_rows(str(path))] == ["a", "b", "c", "d"]
