"""bench/replay.py's harness: a kernel that ran out of memory beside other verification lanes on one
GPU is judged again alone, so the lanes' shared memory is never reported as the kernel's verdict;
the authors' incorrect kernels are verified first, builds last."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("replay", REPO / "bench" / "replay.py")
replay = importlib.util.module_from_spec(spec)
spec.loader.exec_module(replay)


class _Evaluator:
    def __init__(self, device: str) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def warm(self) -> None:
        pass


def test_an_out_of_memory_beside_other_lanes_is_judged_again_alone(monkeypatch):
    import kernelevo.evaluate
    import kernelevo.verify
    from kernelevo.verdict import Verdict

    calls: list[str] = []
    lock = threading.Lock()

    def fake_verify(task, cand, **kw):
        with lock:
            calls.append(Path(cand).name)
            first = calls.count(Path(cand).name) == 1
        if Path(cand).name == "big.py" and first:
            return Verdict("runtime_error", "out of memory while running forward (needs ~40 GiB)")
        return Verdict("verified", "outputs match the reference on 5 input sets")

    monkeypatch.setattr(kernelevo.evaluate, "Evaluator", _Evaluator)
    monkeypatch.setattr(kernelevo.verify, "verify_candidate", fake_verify)
    entries = [
        {"id": n, "task": "t.py", "candidate": f"{n}.py", "backend": "triton"}
        for n in ("big", "a", "b", "c")
    ]
    built = replay.Builds()
    built.finished = True
    rows = replay.verify_all(entries, 3, built, "cpu")
    by_id = {r["id"]: r for r in rows}
    assert len(rows) == 4 and by_id["big"]["status"] == "verified" and by_id["big"]["judged_alone"]
    assert calls.count("big.py") == 2 and len(calls) == 5


def test_the_authors_incorrect_kernels_come_first_and_builds_last():
    entries = [
        {"id": "a", "backend": "cuda_inline", "author_verdict": "correct"},
        {"id": "b", "backend": "triton", "author_verdict": "correct"},
        {"id": "c", "backend": "cuda_inline", "author_verdict": "incorrect"},
        {"id": "d", "backend": "triton", "author_verdict": "incorrect"},
    ]
    assert [e["id"] for e in replay.verification_order(entries)] == ["d", "b", "c", "a"]


def test_a_selection_takes_one_source_the_best_ranked_per_task_then_an_even_sample():
    entries = [
        {"id": f"{src}-{t}-{r}", "source": f"owner/{src}", "task": f"{src}{t}.py"}
        for src in ("KernelBenchFiltered", "KernelBenchLeaderboard")
        for t in range(6)
        for r in range(3)
    ]
    picked = replay.select(entries, "leaderboard", 1, 3)
    assert [e["id"] for e in picked] == [
        "KernelBenchLeaderboard-0-0",
        "KernelBenchLeaderboard-2-0",
        "KernelBenchLeaderboard-4-0",
    ]
    assert len(replay.select(entries, "all", 2, None)) == 24
    assert len(replay.select(entries, replay.DEFAULT_SOURCES, None, None)) == 18


def test_compiled_but_not_run_is_left_out_of_the_agreement_and_timings_compare_per_gpu(
    monkeypatch,
):
    monkeypatch.setattr(replay, "ROOT", REPO / "bench" / "replay")
    row = {"author_verdict": "correct", "author_speedup": 2.0}
    rows = [
        {
            **row,
            "id": "a",
            "status": "verified",
            "reason": "",
            "speedup": 2.1,
            "author_hardware": "H100",
        },
        {
            **row,
            "id": "b",
            "status": "verified",
            "reason": "",
            "speedup": 0.5,
            "author_hardware": "L40S",
        },
        {
            **row,
            "id": "d",
            "status": "unverified",
            "reason": "not run: it needs a GPU, none here (candidate:9: Torch not compiled with CUDA enabled)",
            "author_hardware": "L40S",
        },
        {
            **row,
            "id": "c",
            "status": "unverified",
            "reason": "compiled, not run (no GPU): x",
            "author_hardware": "L40S",
        },
    ]
    text = replay.report(rows)
    assert "agreement 2/2 = 100.0%" in text, text
    assert "not run (no GPU; compiled where a build was asked for): 2, left out" in text
    assert "ours / authors' (H100): geomean 1.050 over 1 kernels; 1 within +-10 %" in text
    assert "ours / authors' (L40S): geomean 0.250 over 1 kernels; 0 within +-10 %" in text


def test_a_known_disagreement_is_recognised_by_any_of_its_symptoms():
    """A kernel that reads past its input fails as an illegal memory access on one run and as a
    wrong value on another: the authors' error is recognised either way."""
    known = {"k": {"when": ["illegal memory access", "outside atol"], "class": "authors' error"}}
    for reason in ("illegal memory access in forward", "1 of 1 elements outside atol=0.0001"):
        assert replay.classify({"id": "k", "reason": reason}, known) == "authors' error"
    assert replay.classify({"id": "k", "reason": "timeout"}, known).startswith("unclassified")
    one = {"k": {"when": "timeout", "class": "environment"}}
    assert replay.classify({"id": "k", "reason": "a timeout"}, one) == "environment"
