"""bench/gate_timeline.py: the shares of a window each GPU's gate spent held alone for timing,
alone for memory, shared only, or not at all, from the stretches verdicts record."""

import importlib.util

from support import ROOT

spec = importlib.util.spec_from_file_location("gate_timeline", ROOT / "bench" / "gate_timeline.py")
gate_timeline = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gate_timeline)
timeline = gate_timeline.timeline


def _verdict(gpu, *held):
    return {
        "device": {"gpu_index": gpu},
        "phases": {
            "gpu_gate": {"held": [{"as": a, "for": f, "from": s, "to": e} for a, f, s, e in held]}
        },
    }


def test_overlapping_holds_count_for_the_strongest_and_gaps_for_none():
    verdicts = [
        _verdict(0, ("shared", "checks", 0.0, 4.0), ("exclusive", "timing", 4.0, 6.0)),
        _verdict(0, ("shared", "checks", 2.0, 5.0)),  # ends inside the timing: it steps aside there
        _verdict(0, ("exclusive", "memory", 7.0, 8.0)),
    ]
    shares = timeline(verdicts, 0.0, 10.0)["0"]
    assert shares == {"timing_alone": 0.2, "memory_alone": 0.1, "shared": 0.4, "none": 0.3}


def test_only_the_window_counts_and_each_gpu_is_its_own():
    verdicts = [
        _verdict(0, ("exclusive", "timing", -5.0, 1.0)),
        _verdict(1, ("shared", "cleanup", 1.0, 2.0)),
        {"device": {"gpu_index": 2}, "phases": {}},  # a verdict made without a gate (one slot)
    ]
    out = timeline(verdicts, 0.0, 2.0)
    assert out["0"] == {"timing_alone": 0.5, "memory_alone": 0.0, "shared": 0.0, "none": 0.5}
    assert out["1"]["shared"] == 0.5 and out["1"]["none"] == 0.5
    assert "2" not in out
