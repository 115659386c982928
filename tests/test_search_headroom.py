"""A kernel at the task's roofline floor ends the searching that cannot improve it: the
parameter search does not start (or stops once a configuration reaches the floor), and the
model loop asks no more. The floors are built from verdicts as the judge writes them; the
figures of the first cases are the H200's (a 4,177 GB/s copy peak, KernelBench's ReLU at
v0.1 size, the masked softmax example that skips half its input)."""

from __future__ import annotations

import asyncio

import pytest
from fakes.anthropic_server import serve_anthropic
from fakes.scripted_server import kernel_reply
from support import EXAMPLES
from test_search_tune import SEED, fake_gpu

from kernelevo.llm import make_provider
from kernelevo.search.headroom import family_floor, memory_floor
from kernelevo.search.loop import Search, SearchConfig
from kernelevo.search.prompt import PromptBuilder, TaskContext
from kernelevo.store import Store
from kernelevo.task import read_task
from kernelevo.verdict import Verdict

TASK = read_task(EXAMPLES / "softmax.py")


def timed(ms: float, nbytes: float, gbps: float = 4177.0, **roofline: float) -> Verdict:
    return Verdict(
        "verified",
        "ok",
        timings={"candidate_ms": ms},
        roofline={"bytes": nbytes, "peak_gbps": gbps, **roofline},
    )


@pytest.mark.parametrize(
    ("ms", "nbytes", "reached"),
    [
        (3.009, 2 * 4096 * 393216 * 4, True),  # ReLU: 103 % of the copy peak
        (0.1023, 512 * 2**20, False),  # masked softmax: 126 %, so the bytes are no floor
        (6.0, 2 * 4096 * 393216 * 4, False),  # half the floor's speed
    ],
)
def test_the_memory_floor_is_reached_only_near_it(ms: float, nbytes: int, reached: bool) -> None:
    floor = memory_floor(timed(ms, nbytes))
    assert floor is not None and floor.kind == "memory"
    assert floor.reached_by(ms) is reached


def test_counted_flops_bound_only_a_kernel_that_does_them() -> None:
    """2.7 ms against a 2.6 ms FLOP floor is at it; 0.5 ms beats it (another algorithm), so only
    the memory floor holds, far below."""
    gemm = {"flops": 2.6e12, "peak_tflops": 1000.0}
    floor = family_floor(timed(2.7, 1e8, **gemm))
    assert floor is not None and floor.kind == "compute" and floor.reached_by(2.7)
    floor = family_floor(timed(0.5, 1e8, **gemm))
    assert floor is not None and floor.kind == "memory" and not floor.reached_by(0.5)
    assert memory_floor(Verdict("verified", "ok")) is None  # nothing timed: no floor


def floored_gpu(floor_ms: float):
    """fake_gpu (the seed 3.1 ms, the best configuration 1.0 ms) on a task whose memory floor is
    floor_ms."""

    def gpu(path, seed, screen=False):
        v = fake_gpu(path, seed, screen)
        v.roofline = {"bytes": floor_ms * 1e9, "peak_gbps": 1000.0}
        return v

    return gpu


def tune_rows(floor_ms: float, tmp_path) -> tuple[int, list[str]]:
    store = Store(tmp_path / f"s{floor_ms}.sqlite")
    cfg = SearchConfig(provider="offline", device="cuda", tune_evals=25, tune_top=1, seed=3)
    search = Search(
        TASK, cfg, store=store, evaluate=floored_gpu(floor_ms), seeds=[("template:copy", SEED)]
    )
    result = asyncio.run(search.run())
    rows = [r for r in store.candidates(result.run_id) if r["origin"] == "tune"]
    return len(rows), search.notes


def test_a_kernel_at_the_floor_is_not_tuned(tmp_path) -> None:
    count, notes = tune_rows(3.0, tmp_path)
    assert count == 0
    assert any("not tuned: 3.1 ms is at 97% of the task's memory floor" in n for n in notes), notes


def test_the_tuning_stops_when_a_configuration_reaches_the_floor(tmp_path) -> None:
    far, _ = tune_rows(0.1, tmp_path)
    near, notes = tune_rows(1.1, tmp_path)  # the 10th configuration takes 1.1 ms
    assert near < far, (near, far)
    assert any("1.1 ms is at 100% of the task's memory floor" in n for n in notes), notes


def model_calls(floor_ms: float, tmp_path, stop_at_floor: bool = True) -> tuple[int, str]:
    answers = [kernel_reply(SEED + f"\n# answer {i}\n") for i in range(2)]
    store = Store(tmp_path / f"m{floor_ms}{stop_at_floor}.sqlite")
    with serve_anthropic(answers) as server:
        provider = make_provider("anthropic", "claude-test", base_url=server.base_url, api_key="k")
        builder = PromptBuilder(
            TaskContext(task_name="softmax", reference=TASK.source, hardware="test", baselines="-")
        )
        search = Search(
            TASK,
            SearchConfig(
                provider="anthropic",
                device="cuda",
                iterations=2,
                repair_tries=0,
                tune_evals=0,
                stop_at_floor=stop_at_floor,
            ),
            store=store,
            evaluate=floored_gpu(floor_ms),
            provider=provider,
            builder=builder,
            seeds=[("template:copy", SEED)],
        )
        result = asyncio.run(search.run())
        return len(server.requests), result.stop_reason


def test_the_model_is_not_asked_once_the_best_kernel_is_at_the_floor(tmp_path) -> None:
    calls, reason = model_calls(3.0, tmp_path)
    assert calls == 0 and "at 97% of the task's memory floor" in reason, reason
    calls, reason = model_calls(1.0, tmp_path)
    assert calls == 2 and "floor" not in reason, reason
    calls, reason = model_calls(3.0, tmp_path, stop_at_floor=False)  # --past-floor
    assert calls == 2 and "floor" not in reason, reason


def test_past_floor_on_the_command_line_keeps_searching() -> None:
    import argparse

    from kernelevo.cli.optimize import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    assert parser.parse_args(["optimize", "t.py"]).stop_at_floor is True
    assert parser.parse_args(["optimize", "t.py", "--past-floor"]).stop_at_floor is False
