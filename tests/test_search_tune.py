"""The search's parameter-search phase, with a fake evaluator standing in for the GPU."""

import asyncio
import math
import re

import pytest
from support import EXAMPLES

from kernelevo.phase import Phase
from kernelevo.search.loop import Search, SearchConfig
from kernelevo.store import Store
from kernelevo.task import read_task
from kernelevo.verdict import Verdict

SEED = """import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, o_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        o = torch.empty_like(x)
        k[(triton.cdiv(x.numel(), 64),)](x, o, x.numel(), BLOCK_SIZE=64, num_warps=4)
        return o
"""


def fake_gpu(path, seed, screen=False):
    """The seed (3.1 ms) is within reach of the baselines, so the tuner does not give up on it.
    Like the verifier, a configuration judged for screening passes as `screened`."""
    src = path.read_text()
    block = int(re.search(r"BLOCK_SIZE=(\d+)", src).group(1))
    warps = int(re.search(r"num_warps=(\d+)", src).group(1))
    ms = 1.0 + abs(math.log2(block) - 8) + 0.1 * abs(math.log2(warps) - 3)
    return Verdict(
        "screened" if screen else "verified",
        "ok",
        backend="triton",
        kernel_launches=1,
        timings={
            "candidate_ms": ms,
            "eager_ms": 4.0,
            "compile_ms": 3.5,
            "speedup_eager": 4.0 / ms,
            "speedup_compile": 3.5 / ms,
        },
    )


def test_tuning_improves_the_seed_and_is_honest(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    cfg = SearchConfig(provider="offline", device="cuda", tune_evals=25, tune_top=1, seed=3)
    search = Search(
        read_task(EXAMPLES / "softmax.py"),
        cfg,
        store=store,
        evaluate=fake_gpu,
        seeds=[("template:copy", SEED)],
    )
    result = asyncio.run(search.run())
    best = result.best
    assert (
        best.origin == "tune" and "BLOCK_SIZE=256" in best.source and "num_warps=8" in best.source
    )
    assert best.time_ms == 1.0 and result.status == "improved"
    rows = store.candidates(result.run_id)
    assert sum(r["origin"] == "tune" for r in rows) <= 25
    phases = store.get_run(result.run_id).summary["phase_s"]
    assert set(phases) == {"seeds", "tune"}, phases  # an offline search: no model phase
    assert all(v >= 0 for v in phases.values())


def test_tuning_spends_no_evaluation_on_what_compiling_ahead_refused(tmp_path):
    from kernelevo.verdict import Check

    def gpu_with_a_shared_memory_limit(path, seed, screen=False):
        if int(re.search(r"BLOCK_SIZE=(\d+)", path.read_text()).group(1)) >= 512:
            return Verdict(
                "compile_error",
                "OutOfResources: out of resource: shared memory",
                backend="triton",
                checks=[Check("compiled_ahead", False, "did not compile")],
            )
        return fake_gpu(path, seed, screen)

    store = Store(tmp_path / "s.sqlite")
    cfg = SearchConfig(provider="offline", device="cuda", tune_evals=24, tune_top=1, seed=3)
    search = Search(
        read_task(EXAMPLES / "softmax.py"),
        cfg,
        store=store,
        evaluate=gpu_with_a_shared_memory_limit,
        seeds=[("template:copy", SEED)],
    )
    result = asyncio.run(search.run())
    rows = [r for r in store.candidates(result.run_id) if r["origin"] == "tune"]
    refused = [r for r in rows if r["status"] == "compile_error"]
    assert refused, "the tuner tried tiles beyond the limit"
    assert len(rows) - len(refused) == 24, "the whole budget went to configurations that ran"
    assert "BLOCK_SIZE=256" in result.best.source


def test_no_tuning_without_measured_times(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    cfg = SearchConfig(provider="offline", device="cpu", tune_evals=8)
    search = Search(
        read_task(EXAMPLES / "softmax.py"),
        cfg,
        store=store,
        evaluate=lambda p, s: Verdict("verified", "ok", backend="triton", kernel_launches=1),
        seeds=[("template:copy", SEED)],
    )
    result = asyncio.run(search.run())
    assert result.status == "verified_unmeasured"  # verified, never measured: not "improved"
    assert (
        not result.outcome.improved
        and result.outcome.headline() == "verified, speed not measured without a GPU"
    )
    assert "parameter search skipped" in store.get_run(result.run_id).summary["notes"][0]


def test_a_kernel_far_slower_than_the_baselines_is_not_tuned(tmp_path):
    """A parent 3x slower than the better baseline costs no tuning evaluation; the notes say why."""

    def slow_gpu(path, seed, screen=False):
        v = fake_gpu(path, seed, screen)
        v.timings.update(eager_ms=1.2, compile_ms=1.0, speedup_eager=1.2 / 3.1)
        return v

    store = Store(tmp_path / "s.sqlite")
    cfg = SearchConfig(provider="offline", device="cuda", tune_evals=24, tune_top=1, seed=3)
    search = Search(
        read_task(EXAMPLES / "softmax.py"),
        cfg,
        store=store,
        evaluate=slow_gpu,
        seeds=[("template:copy", SEED)],
    )
    result = asyncio.run(search.run())
    assert not [r for r in store.candidates(result.run_id) if r["origin"] == "tune"]
    assert any("not tuned: 3.1 ms is 3.1x the better baseline's 1 ms" in n for n in search.notes)


def _two_families(slower_by: float):
    """Every configuration of family a within 0.2 % of 2.7 ms (a library call dominates); family b
    starts `slower_by` behind it and its configurations spread as usual."""

    def gpu(path, seed, screen=False):
        src = path.read_text()
        v = fake_gpu(path, seed, screen)
        block = int(re.search(r"BLOCK_SIZE=(\d+)", src).group(1))
        if "# family b" in src:
            ms = 2.7 * slower_by + 0.05 * abs(math.log2(block) - 6)
        else:
            ms = 2.7 + 0.0005 * abs(math.log2(block) - 6)
        v.timings.update(candidate_ms=ms, eager_ms=2.8, compile_ms=2.75, speedup_eager=2.8 / ms)
        v.timings.update(speedup_compile=2.75 / ms)
        return v

    return gpu


def test_a_family_starting_beside_a_flat_one_is_not_tuned(tmp_path):
    """A flat family says the task's time is not in launch parameters: a second family that starts
    within 5 % of it costs no verdict; one that starts further off is still tuned."""
    family_b = SEED.replace("class ModelNew", "# family b\nclass ModelNew")
    counts = {}
    for slower_by in (1.005, 1.2):
        store = Store(tmp_path / f"s{slower_by}.sqlite")
        cfg = SearchConfig(provider="offline", device="cuda", tune_evals=12, tune_top=2, seed=3)
        search = Search(
            read_task(EXAMPLES / "softmax.py"),
            cfg,
            store=store,
            evaluate=_two_families(slower_by),
            seeds=[("template:a", SEED), ("template:b", family_b)],
        )
        result = asyncio.run(search.run())
        rows = [r for r in store.candidates(result.run_id) if r["origin"] == "tune"]
        counts[slower_by] = sum("# family b" in r["source"] for r in rows)
        assert any("all within 1%" in n for n in search.notes), search.notes
        skipped = [n for n in search.notes if "not tuned: it starts within 5%" in n]
        assert bool(skipped) == (slower_by < 1.05), search.notes
    assert counts[1.005] == 0 and counts[1.2] > 0, counts


def _slow_counting(peak):
    import threading
    import time

    lock, running = threading.Lock(), [0]

    def slow_gpu(path, seed, screen=False):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.3)
        with lock:
            running[0] -= 1
        return fake_gpu(path, seed, screen)

    return slow_gpu


def test_a_familys_configurations_are_judged_two_at_a_time(tmp_path):
    peak = [0]
    cfg = SearchConfig(provider="offline", device="cuda", tune_evals=6, tune_top=1, seed=3)
    search = Search(
        read_task(EXAMPLES / "softmax.py"),
        cfg,
        store=Store(tmp_path / "s.sqlite"),
        evaluate=_slow_counting(peak),
        seeds=[("template:copy", SEED)],  # one seed: any overlap is the parameter search's
        eval_slots=1,
    )
    result = asyncio.run(search.run())
    tuned = [r for r in search.store.candidates(result.run_id) if r["origin"] == "tune"]
    assert 2 <= len(tuned) <= 6 and peak[0] == 2, (len(tuned), peak)


def test_the_seeds_are_judged_side_by_side(tmp_path):
    """A search's seeds (templates, Inductor's kernels) are independent: with two evaluation
    slots, one holds the second slot while another is judged."""
    peak = [0]
    slow_gpu = _slow_counting(peak)

    cfg = SearchConfig(provider="offline", device="cuda", tune_evals=0, seed=3)
    seeds = [
        (f"template:copy{i}", SEED.replace("BLOCK_SIZE=64", f"BLOCK_SIZE={64 << i}"))
        for i in range(3)
    ]
    search = Search(
        read_task(EXAMPLES / "softmax.py"),
        cfg,
        store=Store(tmp_path / "s.sqlite"),
        evaluate=slow_gpu,
        seeds=seeds,
        eval_slots=2,
    )
    result = asyncio.run(search.run())
    assert len(store_rows := search.store.candidates(result.run_id)) == 3, store_rows
    assert peak[0] >= 2, "the seeds were judged one after another"


def _tuned(tmp_path, gpu, tune_evals):
    """An offline search of the one seed, tuned with `gpu` standing in for the dispatcher."""
    cfg = SearchConfig(provider="offline", device="cuda", tune_evals=tune_evals, tune_top=1, seed=3)
    search = Search(
        read_task(EXAMPLES / "softmax.py"),
        cfg,
        store=Store(tmp_path / "s.sqlite"),
        evaluate=gpu,
        seeds=[("template:copy", SEED)],
    )
    return search, asyncio.run(search.run())


def test_only_a_configuration_verified_in_full_is_kept(tmp_path):
    """Configurations are screened; the fastest is then verified in full. One that passes the
    screening but fails in full (a tile that breaks on an input set the screening skipped) is
    never kept: the next fastest is verified instead."""
    judged = []

    def gpu(path, seed, screen=False):
        src = path.read_text()
        judged.append(screen)
        v = fake_gpu(path, seed, screen)
        if not screen and "BLOCK_SIZE=256" in src and "num_warps=8" in src:
            v.status, v.reason = "incorrect", "input set 3: mismatch at [4095]"
        return v

    search, result = _tuned(tmp_path, gpu, 25)
    best = result.best
    assert best.status == "verified" and best.origin == "tune", best
    assert not ("BLOCK_SIZE=256" in best.source and "num_warps=8" in best.source)
    assert best.time_ms == 1.1 and result.status == "improved"  # the runner-up, verified in full
    rows = [r for r in search.store.candidates(result.run_id) if r["origin"] == "tune"]
    assert {r["status"] for r in rows} == {"screened", "incorrect", "verified"}
    assert sum(not s for s in judged) == 1 + 2, "the seed, then two configurations in full"
    assert any(
        "passed the screening but not full verification (incorrect" in n for n in search.notes
    )


def test_a_screened_configuration_is_never_the_result(tmp_path):
    """Every full verification fails: the seed stays the result, however fast the screening was."""

    def gpu(path, seed, screen=False):
        v = fake_gpu(path, seed, screen)
        if not screen and "BLOCK_SIZE=64," not in path.read_text():
            v.status, v.reason = "incorrect", "mismatch"
        return v

    search, result = _tuned(tmp_path, gpu, 12)
    assert result.best.origin == "template:copy" and result.best.status == "verified"
    notes = [n for n in search.notes if "not full verification" in n]
    assert len(notes) == 2, search.notes  # CONFIRM_TRIES


def test_a_search_killed_before_its_full_verification_finishes_it_on_resume(tmp_path):
    """Killed after the screening, before the fastest configuration's full verdict: the resumed
    run verifies it in full without screening the configurations again."""

    class Killed(Exception):
        pass

    full = []

    def killed_at_the_full_verdict(path, seed, screen=False):
        if not screen and "BLOCK_SIZE=64," not in path.read_text():
            raise Killed
        return fake_gpu(path, seed, screen)

    def gpu(path, seed, screen=False):
        full.append(not screen)
        assert not screen, "the resumed run screened a configuration again"
        return fake_gpu(path, seed, screen)

    store = Store(tmp_path / "s.sqlite")
    cfg = SearchConfig(provider="offline", device="cuda", tune_evals=25, tune_top=1, seed=3)

    def search(evaluate, run_id=None):
        return Search(
            read_task(EXAMPLES / "softmax.py"),
            cfg,
            store=store,
            evaluate=evaluate,
            seeds=[("template:copy", SEED)],
            run_id=run_id,
            workdir=tmp_path,
        )

    first = search(killed_at_the_full_verdict)
    with pytest.raises(Killed):
        asyncio.run(first.run())
    rows = store.candidates(first.run_id)
    assert {r["status"] for r in rows if r["origin"] == "tune"} == {"screened"}
    result = asyncio.run(search(gpu, first.run_id).run())
    assert full == [True], full  # one full verdict: the fastest screened configuration
    phases = [Phase.of_row(r) for r in store.candidates(first.run_id)]
    assert len(phases) == len(set(phases)), "the resumed verdict took a number already used"
    best = result.best
    assert best.origin == "tune" and best.status == "verified" and best.time_ms == 1.0
