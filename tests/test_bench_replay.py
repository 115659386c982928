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
