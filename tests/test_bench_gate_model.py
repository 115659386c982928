"""bench/gate_model.py: the union of GPU-busy marks, and one short run of each rule set through
the real gate (each verdict's steps as sleeps)."""

import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "gate_model", Path(__file__).resolve().parents[1] / "bench" / "gate_model.py"
)
gate_model = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gate_model)


def test_busy_is_the_union_of_overlapping_marks_within_the_window():
    clock = gate_model.Clock(1.0)
    clock.busy = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (9.0, 12.0)]
    assert clock.busy_fraction(0.0, 10.0) == 0.5  # 0-3, 5-6 and 9-10: 5 of 10 s


def test_every_rule_set_judges_verdicts_through_the_real_gate():
    for rules in gate_model.RULES:
        row = gate_model.run(2, rules, seconds=1.5, scale=0.05)
        assert row["rules"] == rules
        assert row["verdicts_per_s"] > 0 and 0 < row["gpu_busy"] <= 1, row
