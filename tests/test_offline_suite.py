"""bench/offline_suite.py's bookkeeping: the KernelBench corpus it runs (cheapest first), shards,
resumable rows and the table and totals it writes (what KernelEvo ships, how proposals stand
against torch.compile, out-of-memory tasks, tasks without a reason)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("offline_suite", REPO / "bench" / "offline_suite.py")
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
table = importlib.util.module_from_spec(
    s := importlib.util.spec_from_file_location(
        "offline_suite_table", REPO / "bench" / "offline_suite_table.py"
    )
)
s.loader.exec_module(table)


def test_the_corpus_is_kernelbench_level1_and_level2_with_its_source_noted() -> None:
    tasks = suite.find_tasks("kernelbench", [])
    names = [suite.task_name(t) for t in tasks]
    assert len(tasks) >= 50 and len(set(names)) == len(names)
    assert (
        sum(n.startswith("L1_") for n in names) >= 20
        and sum(n.startswith("L2_") for n in names) >= 20
    )
    gib = [suite.task_gib(t) for t in tasks]
    assert gib == sorted(gib) and gib[0] < 0.2 < 10 < gib[-1]  # cheapest first
    kinds = {line.split()[2] for line in _selection_lines()}
    assert kinds == {
        "elementwise",
        "reduction",
        "norm",
        "pooling",
        "matmul",
        "conv",
        "gemm+epilogue",
        "conv+epilogue",
    }
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


def _selection_lines() -> list[str]:
    text = (REPO / "bench" / "kernelbench" / "OFFLINE_SELECTION").read_text()
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_totals_count_what_ships_and_the_tasks_without_a_reason(tmp_path: Path) -> None:
    ci = {"candidate": [0.49, 0.51], "eager": [1.9, 2.1], "compile": [0.99, 1.01]}
    rows = [
        _row("a", 2.0, 1.0, 0.5, True, versus_compile="beats", ci=ci),
        _row("b", 1.0, 0.5, 0.8, False),
        _row("c", 1.0, 1.0, None, False, evaluations=0),
        _row("d", 1.0, 1.0, None, False, evaluations=0, reason="templates: no template for cumsum"),
        _row(
            "e",
            4.0,
            1.0,
            1.004,
            True,
            versus_compile="matches",
            ci={"candidate": [0.99, 1.02], "compile": [0.98, 1.01]},
        ),
        {
            "task": "f",
            "eager_ms": None,
            "compile_ms": None,
            "best_ms": None,
            "proposed": False,
            "evaluations": 2,
            "notes": [],
            "reason": "no candidate verified",
            "oom": 2,
            "elapsed_s": 3.0,
        },
    ]
    lines = "\n".join(table.summary_lines(rows, "cuda"))
    # ships (kernel, else the user's code): 4, 1, 1, 1, 3.98 over the timed; f (untimed) is 1.0
    ships = (4 * 4 / 1.004) ** (1 / 5)
    assert (
        f"{ships:.2f}x over the timed tasks, {(4 * 4 / 1.004) ** (1 / 6):.2f}x over all 6" in lines
    )
    assert "proposals: 2 (1 beat torch.compile, 1 match it)" in lines
    # e's median is 0.4 % above torch.compile's, inside the noise: named, but not beyond it
    assert "beyond the noise (95 % intervals): none; by the medians alone: ['e (0.996x)']" in lines
    assert "out of memory: 1 tasks ['f']" in lines
    assert "without candidates and without a reason: ['c']" in lines
    md = "\n".join(table.markdown_table(rows))
    assert "| a | 2 | 1 | 0.5 | inductor | yes (beats torch.compile) |" in md
    assert "| e | 4 | 1 | 1.004 | inductor | yes (matches torch.compile) |" in md
    slow = dict(rows[4], ci={"candidate": [1.03, 1.05], "compile": [0.98, 1.01]})
    assert "intervals): ['e']" in "\n".join(table.summary_lines([slow], "cuda"))


def test_a_task_without_candidates_or_notes_has_no_reason() -> None:
    from types import SimpleNamespace

    result = SimpleNamespace(status="no_verified_candidate", outcome=None, best=None)
    assert suite.why_not(result, [], []) == ""
    assert suite.why_not(result, [], ["templates: no template for mm"]) == (
        "templates: no template for mm"
    )


def test_a_long_failure_reason_is_cut_at_a_word_and_says_so() -> None:
    from types import SimpleNamespace

    result = SimpleNamespace(status="no_verified_candidate", outcome=None, best=None)
    reason = (
        "ValueError while running forward: " + "input overflow the kernels' 32-bit indexing " * 6
    )
    cands = [{"status": "runtime_error", "origin": "inductor", "verdict": {"reason": reason}}]
    line = suite.why_not(result, cands, [])
    assert line.startswith("no candidate verified (1 tried; inductor: ValueError while running")
    assert line.endswith(" …)") and line[: -len(" …)")].split()[-1] in reason.split()


def test_rows_of_several_calls_resume_as_one(tmp_path: Path) -> None:
    first, second = tmp_path / "call1.jsonl", tmp_path / "call2.jsonl"
    first.write_text(json.dumps(_row("a", 1, 1, None, False)) + "\n")
    second.write_text(
        json.dumps(_row("b", 1, 1, None, False)) + "\n" + json.dumps(_row("a", 2, 1, None, False))
    )
    rows = suite.read_rows(f"{first},{second},{tmp_path / 'missing.jsonl'}")
    assert sorted((r["task"], r["eager_ms"]) for r in rows) == [("a", 2), ("b", 1)]


def test_resumed_rows_from_another_device_run_again() -> None:
    h200, h100 = "cuda (NVIDIA H200)", "cuda (NVIDIA H100 80GB HBM3)"
    rows = [
        {**_row("a", 1, 1, None, False), "device": h200},
        {**_row("b", 1, 1, None, False), "device": h100},
        _row("c", 1, 1, None, False),  # written before rows named their device
    ]
    here, elsewhere = suite.same_machine(rows, h200)
    assert [r["task"] for r in here] == ["a", "c"]
    assert [r["task"] for r in elsewhere] == ["b"]


LAUNCHED = """import triton
import triton.language as tl


@triton.jit
def k(x_ptr, BLOCK_SIZE: tl.constexpr):
    pass


def launch(x):
    k[(1,)](x, BLOCK_SIZE=256, num_warps=8)
"""


def test_each_evaluation_says_where_its_verdict_spent_its_seconds() -> None:
    cand = {
        "origin": "tune",
        "time_ms": 2.703712,
        "verdict": {
            "phases": {
                "total_s": 8.1,
                "checks_s": 6.9,
                "load_s": 0.6,
                "gpu_gate": {"waited_s": 4.2, "held": []},
                "dispatch": {"compile_ahead_s": 3.3, "slot_wait_s": 9.5},
                "cleanup_s": 0.2,
            },
            "timings": {"phases": {"candidate_timing_s": 0.9}},
        },
        "status": "screened",
        "source": LAUNCHED,
    }
    row = suite.evaluation_seconds(cand)
    assert dict(zip(suite.EVAL_FIELDS, row, strict=True)) == {
        "origin": "tune",
        "ms": 2.7037,
        "total_s": 8.1,
        "gate_wait_s": 4.2,
        "load_s": 0.6,
        "checks_s": 6.9,
        "timing_s": 0.9,
        "compile_ahead_s": 3.3,
        "slot_wait_s": 9.5,
        "cleanup_s": 0.2,
        "status": "screened",
        "config": "BLOCK_SIZE=256 num_warps=8 num_stages=3",  # the default stages included
    }
    # a verdict refused before the GPU has no phases: its seconds are unknown, not zero
    assert suite.evaluation_seconds({"origin": "inductor", "verdict": {}})[2:-2] == [None] * 8


def test_a_task_starts_while_the_median_task_still_fits_and_a_cut_search_is_named() -> None:
    walls = [30.0, 90.0, 215.0]  # the slowest would have stopped every start below 215 s left
    assert table.may_start(120.0, walls) and not table.may_start(80.0, walls)
    assert table.may_start(6.0, []) and not table.may_start(4.0, [])  # 5 s at least
    cut = dict(_row("g", 2.0, 1.0, 1.5, True, versus_compile="beats"), cut_by_deadline=True)
    lines = "\n".join(table.summary_lines([cut, _row("h", 1.0, 1.0, None, False)], "cuda"))
    assert "searches cut by the deadline: ['g']" in lines


def test_the_biggest_tasks_start_first() -> None:
    tasks = suite.shard(suite.find_tasks("kernelbench", []), "0/2")
    order = [suite.task_gib(t) for t in suite.run_order(tasks)]
    assert order == sorted(order, reverse=True) and order[0] >= 12.0
    same = [t for t in suite.run_order(tasks) if suite.task_gib(t) == order[-1]]
    assert same == [t for t in tasks if suite.task_gib(t) == order[-1]]  # file order among equals
