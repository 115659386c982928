"""The memory plan on a CPU: the need estimated before anything is allocated, input sets held one at a
time, timing sets sized by what is free, large outputs compared in slices with the same bounds, and
bench/reference_verify.py's reference-through-the-judge path (which can fail: a wrong output is caught)."""

from __future__ import annotations

import gc
import importlib.util
import weakref
from pathlib import Path

import pytest
import torch

from kernelevo.judge.outputs import compare_any_size
from kernelevo.judge.process import Judge
from kernelevo.task import read_task

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

HUGE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.rand(1 << 20, 1 << 18)]  # 1 TiB of fp32

def get_init_inputs():
    return []
"""


def _common(path: Path, size: str = "default") -> dict:
    return {
        "task_path": str(path),
        "task_hash": read_task(path).hash,
        "size": size,
        "device": "cpu",
    }


def test_a_task_too_large_is_refused_with_its_estimate_before_anything_is_allocated(
    tmp_path, monkeypatch
):
    from kernelevo.judge.reference import Reference

    task = tmp_path / "huge_relu.py"
    task.write_text(HUGE)
    monkeypatch.setattr(Reference, "inputs", lambda *a, **k: pytest.fail("inputs were drawn"))
    monkeypatch.setattr(Reference, "build", lambda *a, **k: pytest.fail("the model was built"))
    reply = Judge().handle({"op": "probe", **_common(task), "seed": 1})
    error = reply.get("task_error", "")
    assert "needs ~7168.0 GiB" in error and "inputs 1024.00 GiB per set" in error, reply
    assert "make the shapes in get_inputs() smaller" in error and "--size small" in error


def test_the_estimate_counts_the_inputs_and_outputs_the_task_really_has():
    from kernelevo.judge.reference import Reference

    ref = Reference(str(EXAMPLES / "softmax.py"), "small", torch.device("cpu"))
    need = ref.need()
    ref.build(1)
    x = ref.inputs(1)
    out = ref.forward(x)
    assert need.inputs == sum(t.numel() * t.element_size() for t in x)
    assert need.outputs == out.numel() * out.element_size()
    assert need.total >= 2 * need.inputs + need.outputs


def test_an_input_set_is_freed_before_the_next_is_drawn(tmp_path):
    path = EXAMPLES / "softmax.py"
    j = Judge()
    common = _common(path, "small")
    assert "probed" in j.handle({"op": "probe", **common, "seed": 3})
    j.handle({"op": "begin", **common, "seed": 3, "exchange": str(tmp_path), "via": "ipc"})
    alive = []
    for i in range(3):
        j.handle({"op": "inputs", "set": f"s{i}", "seed": 10 + i})
        j.handle({"op": "reference", "set": f"s{i}"})
        s = j.sets[f"s{i}"]
        alive.append((weakref.ref(s["args"][0]), weakref.ref(s["out"])))
        del s
        assert list(j.sets) == [f"s{i}"]  # the judge holds this set only
        j.handle({"op": "drop", "set": f"s{i}"})
        gc.collect()
        assert alive[-1][0]() is None and alive[-1][1]() is None, "input or reference output kept"
    j.handle({"op": "end"})


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_verification_sets_the_heap_aside_and_a_new_task_gives_it_back(tmp_path):
    """After a verification the judge's collections scan only newer objects (a full one costs ~0.2 s
    over torch's own); when the task changes, what was set aside is collectable again."""
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text((EXAMPLES / "softmax.py").read_text())
    second.write_text((EXAMPLES / "rms_norm.py").read_text())
    j = Judge()
    common = _common(first, "small")
    j.handle({"op": "probe", **common, "seed": 3})
    j.handle({"op": "begin", **common, "seed": 3, "exchange": str(tmp_path), "via": "ipc"})
    kept = _Cycle()  # alive at the end of the verification, dropped after it
    j.handle({"op": "end"})
    assert gc.get_freeze_count() > 0, "nothing set aside after the verification"
    gone = weakref.ref(kept)
    del kept
    gc.collect()
    assert gone() is not None, "a collection still scanned what was set aside"
    j.handle({"op": "probe", **_common(second, "small"), "seed": 3})
    gc.collect()
    assert gone() is None, "what was set aside stayed out of reach after the task changed"


def _begun(tmp_path: Path) -> tuple[Judge, int]:
    """A judge that has begun a verification of the softmax example, and its bytes per input set."""
    common = _common(EXAMPLES / "softmax.py", "small")
    j = Judge()
    j.handle({"op": "probe", **common, "seed": 3})
    j.handle({"op": "begin", **common, "seed": 3, "exchange": str(tmp_path), "via": "ipc"})
    return j, sum(t.numel() * t.element_size() for t in j.ref.inputs(0))


def test_timing_sets_are_as_many_as_a_quarter_of_the_free_memory_holds(tmp_path, monkeypatch):
    import kernelevo.judge.process as process

    j, per_set = _begun(tmp_path)
    for free_sets, expected in ((4 * 3.5, 3), (4 * 100, 8), (1, 1)):
        monkeypatch.setattr(process, "available_bytes", lambda _d, n=free_sets: int(n * per_set))
        j.handle({"op": "timing_sets", "seed": 5})
        assert len(j.timing_sets) == expected
    monkeypatch.setattr(process, "available_bytes", lambda _d: int(4 * 10.5 * per_set))
    j.handle({"op": "timing_sets", "seed": 5, "reserve_bytes": 4 * 6 * per_set})  # the candidate's
    assert len(j.timing_sets) == 4
    j.handle({"op": "end"})


def test_timing_sets_stop_at_the_count_whose_rotation_evicts_l2(tmp_path, monkeypatch):
    """Sets of 6 GiB need one other to keep each call's inputs out of L2: holding five (all a
    quarter of an H200 holds) cost the judge 60 GiB and kept two such searches from sharing it."""
    import kernelevo.judge.process as process
    from kernelevo.measure.timers import flush_needed, rotation_set_count

    mib, gib = 1 << 20, 1 << 30
    assert rotation_set_count(60 * mib, 6 * gib) == 2
    assert rotation_set_count(60 * mib, 1 * mib) == 121
    for l2, size in ((60 * mib, 6 * gib), (60 * mib, 40 * mib), (50 * mib, 7 * mib)):
        assert not flush_needed(l2, rotation_set_count(l2, size), size)
        assert flush_needed(l2, rotation_set_count(l2, size) - 1, size)

    j, per_set = _begun(tmp_path)
    monkeypatch.setattr(process, "available_bytes", lambda _d: int(4 * 100 * per_set))
    monkeypatch.setattr(process, "device_l2_bytes", lambda _d: per_set)  # the other sets: 2x L2
    j.handle({"op": "timing_sets", "seed": 5})
    assert len(j.timing_sets) == 3
    j.handle({"op": "end"})


@pytest.mark.parametrize("scale", [1.0, 1.0 + 1e-7, 1.01])
def test_outputs_compared_in_slices_get_the_whole_outputs_verdict(scale):
    torch.manual_seed(0)
    ref = torch.randn(64, 33)
    cand = ref * scale
    cand[5, 7] += 1e-6
    whole = compare_any_size(ref, cand, slice_elements=1 << 30)
    sliced = compare_any_size(ref, cand, slice_elements=100)  # 3 rows a slice
    assert whole[0] == sliced[0]
    assert sliced[2]["rel_l2"] == pytest.approx(whole[2]["rel_l2"], rel=1e-6, abs=1e-12)
    bad = ref.clone()
    bad[40, 2] = float("nan")
    ok, message, _ = compare_any_size(ref, bad, slice_elements=100)
    assert not ok and "rows 39..41" in message


def _driver():
    spec = importlib.util.spec_from_file_location(
        "reference_verify", REPO / "bench" / "reference_verify.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_bench_passes_a_reference_through_verification_and_timing():
    row = _driver().verify_reference(EXAMPLES / "softmax.py", "cpu", 7, 0.02, None, "small")
    assert row["sets"] == 5 + 2 and row["timing_sets"] >= 1
    assert row["eager_ms"] > 0 and row["candidate_ms"] > 0 and row["need_gib"] >= 0


def test_the_bench_catches_an_output_that_does_not_match(monkeypatch):
    mod = _driver()
    real = mod.ReferenceAsCandidate.run
    monkeypatch.setattr(mod.ReferenceAsCandidate, "run", lambda self, a: real(self, a) * 1.01)
    with pytest.raises(RuntimeError, match=r"compare s0: check match\[s0\] failed"):
        mod.verify_reference(EXAMPLES / "softmax.py", "cpu", 7, 0.02, None, "small")


def test_a_large_output_at_a_lower_precision_is_compared_a_slice_at_a_time(monkeypatch, tmp_path):
    """An fp16 convolution against an fp32 reference (a published kernel, 4 GiB of output on the
    H200): the precision fallback must not compare the whole output in float64 at once."""
    import kernelevo.checks.compare as compare
    import kernelevo.judge.outputs as outputs

    monkeypatch.setattr(outputs, "SLICE_ELEMENTS", 1000)
    seen = []
    real = compare.compare_outputs

    def recording(ref, cand, hint=None, precision=None):
        seen.append(ref.numel())
        return real(ref, cand, hint, precision)

    monkeypatch.setattr(outputs, "compare_outputs", recording)
    monkeypatch.setattr(compare, "compare_outputs", recording)
    torch.manual_seed(0)
    ref = torch.randn(64, 100)
    cand = ref.bfloat16().float()  # computed in bf16: beyond the fp32 and TF32 bounds, within bf16
    j = Judge()
    j.ref = type("R", (), {"tolerance": None})()
    j.precision, j.precision_failure, j.precision_rel_l2 = None, None, 0.0
    passed, message, _ = j._compare(ref, cand)
    assert passed and message.endswith("at bf16 tolerance") and j.precision == "bf16", message
    assert max(seen) <= 1000, f"compared {max(seen)} elements at once"
