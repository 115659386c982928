"""What the model is told: every failure with what it needs to fix it, the attempts from the same
parent, the measured target, and the precision/toolchain/policy contract in the cached prefix."""

from kernelevo.search.feedback import describe, one_line
from kernelevo.search.population import Program
from kernelevo.search.prompt import PromptBuilder, TaskContext, allows_tf32
from kernelevo.search.target import TargetFacts
from kernelevo.verdict import Verdict

REFERENCE = "import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x.softmax(-1)\n"
TIMED = Verdict.from_dict(
    {
        "status": "verified",
        "reason": "ok",
        "device": {
            "name": "NVIDIA H200",
            "sm_count": 132,
            "l2_bytes": 60 * 2**20,
            "compute_capability": "9.0",
        },
        "timings": {
            "eager_ms": 0.0412,
            "compile_ms": 0.0301,
            "candidate_ms": 0.02,
            "speedup_eager": 2.06,
        },
        "roofline": {
            "peak_gbps": 4000.0,
            "peak_tflops": 700.0,
            "bytes": 33554432,
            "flops": None,
            "bound": "memory",
        },
    }
)


def builder():
    return PromptBuilder(
        TaskContext(
            task_name="softmax", reference=REFERENCE, hardware="NVIDIA H200", triton_version="3.9.0"
        )
    )


def failed(status, reason, check=None, **kw):
    return Verdict.from_dict(
        {"status": status, "reason": reason, "checks": [check] if check else [], **kw}
    )


def test_every_failure_class_says_what_to_fix():
    incorrect = failed(
        "incorrect",
        "output: 12 of 4096 elements outside atol",
        {
            "name": "match[1]",
            "passed": False,
            "message": "output: 12 of 4096 elements outside atol",
            "detail": {
                "first_index": [3, 17],
                "expected": 0.25,
                "got": 0.0,
                "mismatches": 12,
                "numel": 4096,
            },
        },
    )
    text = describe(incorrect)
    assert "first wrong element at [3, 17]: expected 0.25, got 0" in text and "12 of 4096" in text
    rejected = failed(
        "rejected",
        "the candidate calls the reference op(s) aten::_softmax itself",
        {
            "name": "library_ops",
            "passed": False,
            "message": "calls the reference op",
            "detail": {"banned": ["aten::_softmax"]},
        },
        library_ops=["aten::_softmax", "aten::empty"],
    )
    text = describe(rejected)
    assert (
        "library_ops" in text
        and "aten::_softmax" in text
        and "library ops your code dispatched" in text
    )
    timeout = failed(
        "timeout", "time limit of 120 s reached; the worker was stopped (infinite loop or hang?)"
    )
    assert "120 s" in describe(timeout) and "loop that never ends" in describe(timeout)
    assert one_line(incorrect).startswith("incorrect: first wrong element at [3, 17]")


def test_improve_prompt_carries_the_attempts_from_the_same_parent_and_the_edit_format():
    parent = Program(
        id=7,
        source="class ModelNew: pass\n",
        backend="triton",
        status="verified",
        speedup=1.4,
        verdict=TIMED,
    )
    child = Program(
        id=9,
        source="x",
        backend="triton",
        status="timeout",
        parent_id=7,
        origin="llm",
        verdict=failed("timeout", "time limit of 120 s reached"),
    )
    prompt = builder().improve("triton", parent, [], [child], style="explore")
    body = prompt.messages[-1].content
    assert "#9 (llm): timeout: time limit of 120 s reached" in body
    assert "<<<<<<< SEARCH" in body and "different approach" in body
    exploit = builder().improve("triton", parent, [], [], style="exploit").messages[-1].content
    assert "refining what already works" in exploit and "Earlier attempts" not in exploit


def test_repair_is_one_message_with_the_failed_file_once():
    prompt = builder().repair(
        "triton", "class ModelNew: pass  # v2\n", failed("runtime_error", "boom")
    )
    assert len(prompt.messages) == 1 and prompt.messages[0].content.count("# v2") == 1


def test_repair_states_the_failure_once_and_lists_only_the_other_attempts():
    reason = "output: 12 of 4096 elements outside atol"
    verdict = failed("incorrect", reason, {"name": "match[1]", "passed": False, "message": reason})
    repaired = Program(
        id=4,
        source="class ModelNew: pass  # v2\n",
        backend="triton",
        status="incorrect",
        origin="llm",
        verdict=verdict,
    )
    earlier = Program(
        id=3,
        source="x",
        backend="triton",
        status="timeout",
        origin="llm",
        verdict=failed("timeout", "time limit of 120 s reached"),
    )
    body = builder().repair("triton", repaired.source, verdict, [earlier, repaired])
    body = body.messages[0].content
    assert body.count(reason) == 1 and "- failed check match[1]" in body
    assert "#3 (llm): timeout" in body and "#4" not in body
    bare = builder().repair("triton", "x\n", failed("compile_error", "no code block"))
    assert "What the harness found" not in bare.messages[0].content  # nothing more to say


def test_cached_prefix_states_the_contract_and_the_measured_target():
    b = builder()
    before = "\n".join(p.text for p in b.fresh("triton", []).system)
    assert "measured yet" in before or "not measured" in before
    assert b.learn(TIMED) and not b.learn(
        TIMED
    )  # learnt once: the cached prefix then stays the same
    system = b.fresh("triton", []).system
    assert all(part.cache for part in system)
    text = "\n".join(p.text for p in system)
    for fact in (
        "`tl.make_block_ptr` exists, `tl.advance` does not",
        'input_precision="ieee"',
        "--use_fast_math",
        'arch="sm_90a"',
        "48 KB",
        "not `@triton.autotune`",
        "float32 atol=0.0001",
        "cuBLAS/cuDNN",
        "does not accept TF32",
        "132 SMs",
        "4000 GB/s",
        "eager PyTorch 0.0412 ms",
        "torch.compile 0.0301 ms",
        "95 % interval",
        "memory-bound",
        "8.4 us at the measured bandwidth",
    ):
        assert fact in text, fact
    assert "removed in newer Triton" not in text
    assert (
        len(text) // 4 > 1024
    )  # above the smallest cacheable prefix (tokens at ~4 characters each)


def test_tf32_policy_follows_the_task():
    assert allows_tf32("ALLOW_TF32 = True\n") and not allows_tf32("x = 1  # ALLOW_TF32 = True\n")


def test_target_block_before_anything_is_measured():
    text = TargetFacts().render("no GPU on this machine", "not measured (no GPU here)")
    assert text.startswith(
        "Target hardware: no GPU on this machine\nBaselines: not measured (no GPU here)."
    )
