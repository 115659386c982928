"""What Apply knows about a run is one record (kernelevo/targets/apply_facts.py), read the same
way by `kernelevo apply` and the language server from the summary the search stored, older forms
of that summary included, and checked field by field where it crosses to the plan worker."""

from __future__ import annotations

import pytest

from kernelevo.search.apply_guard import apply_guard
from kernelevo.search.loop import SearchConfig
from kernelevo.search.population import Program
from kernelevo.targets.apply_facts import ApplyFacts
from kernelevo.verdict import Verdict
from kernelevo.worker.protocol import ProtocolError

TENSOR = {"kind": "tensor", "shape": [8, 64], "dtype": "float32", "device": "cuda:0"}


def test_the_summary_the_search_writes_reads_back_as_the_facts():
    verdict = Verdict(
        "verified",
        "",
        inputs=[[TENSOR]],
        device={"name": "NVIDIA H200"},
        timings={"speedup_eager": 1.7, "speedup_compile": 1.1},
    )
    best = Program.judged(3, "src", "triton", verdict)
    cfg = SearchConfig(device="cuda", source_hash="abc", target_id="module:M", source_file="m.py")
    summary = {**apply_guard(best, cfg, "run-1"), "status": "improved"}
    facts = ApplyFacts.of_run(summary, task_source="x = 1\n")
    assert facts == ApplyFacts(
        run_id="run-1",
        backend="triton",
        verified=True,
        status="improved",
        source_hash="abc",
        inputs=[[TENSOR]],
        shapes=[[[8, 64]]],
        dtypes=["float32"],
        devices=["cuda:0"],
        size="default",
        task_source="x = 1\n",
        speedup_eager=1.7,
        speedup_compile=1.1,
        gpu="NVIDIA H200",
        date=summary["date"],
    )
    assert facts.device_kinds == {"cuda"}
    assert ApplyFacts.parse(facts.wire()) == facts  # what the plan worker receives


def test_older_summaries_are_read_too():
    old = {
        "status": "verified",
        "backend": "cuda",
        "target": {"source_hash": "h0"},
        "speedup_eager": 2.0,
        "speedup_compile": 1.5,
        "shapes": [[[4, 4]]],
        "dtypes": ["float16"],
        "devices": ["cuda"],
        "init_args": [],
    }
    facts = ApplyFacts.of_run(old, run_id="r0")
    assert (facts.verified, facts.source_hash, facts.speedup_eager, facts.speedup_compile) == (
        True,
        "h0",
        2.0,
        1.5,
    )
    assert facts.init_args == [] and facts.run_id == "r0"  # recorded as none, not unknown
    assert ApplyFacts.of_run({}).init_args is None and not ApplyFacts.of_run({}).verified


@pytest.mark.parametrize(
    ("field", "value"), [("verified", "yes"), ("dtypes", "float32"), ("init_args", 64)]
)
def test_facts_of_the_wrong_kind_are_refused_where_they_cross(field, value):
    wire = ApplyFacts(run_id="r", backend="triton").wire()
    with pytest.raises(ProtocolError, match=rf"ApplyFacts\.{field}: "):
        ApplyFacts.parse({**wire, field: value})
