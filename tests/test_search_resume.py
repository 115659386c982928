"""Resume in-process: a killed seed phase is finished, an iteration a concurrent run left
evaluating is finished from its paid answer, the wall-time budget goes on from where it was,
and two processes never work on one run. Model calls go to the local Anthropic protocol server;
candidates are judged by a plain function (what is checked here is the loop, not the judge)."""

import asyncio

import pytest
from fakes.anthropic_server import serve_anthropic
from fakes.scripted_server import kernel_reply
from support import EXAMPLES

from kernelevo.llm import make_provider
from kernelevo.phase import Phase
from kernelevo.search.loop import Search, SearchConfig
from kernelevo.search.parse import extract_code
from kernelevo.search.prompt import PromptBuilder, TaskContext
from kernelevo.search.resume import ResumeError
from kernelevo.store import Store
from kernelevo.task import read_task
from kernelevo.verdict import Verdict

TASK = read_task(EXAMPLES / "softmax.py")
CODE = "class ModelNew:\n    pass  # {n}\n"


class Killed(Exception):
    pass


def judge(kill_after=None):
    seen = []

    def evaluate(path, seed):
        seen.append(path.read_text())
        if kill_after is not None and len(seen) > kill_after:
            raise Killed
        return Verdict("verified", "ok", backend="triton")

    return evaluate, seen


def builder():
    return PromptBuilder(
        TaskContext(task_name="softmax", reference=TASK.source, hardware="test", baselines="-")
    )


def search(store, evaluate, *, run_id=None, seeds=(), provider=None, **cfg):
    config = SearchConfig(provider="anthropic" if provider else "offline", tune_evals=0, **cfg)
    return Search(
        TASK,
        config,
        store=store,
        evaluate=evaluate,
        provider=provider,
        builder=builder() if provider else None,
        seeds=list(seeds),
        run_id=run_id,
        workdir=store.path.parent,
    )


def test_resume_finishes_the_seed_phase_it_was_killed_in(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    seeds = [(f"template:t{i}", CODE.format(n=i)) for i in range(4)]
    evaluate, _ = judge(kill_after=2)
    first = search(store, evaluate, seeds=seeds)
    with pytest.raises(Killed):
        asyncio.run(first.run())
    assert store.get_run(first.run_id).summary["seeds_done"] is False
    evaluate, seen = judge()
    again = search(store, evaluate, seeds=seeds, run_id=first.run_id)
    asyncio.run(again.run())
    assert seen == [CODE.format(n=2), CODE.format(n=3)]  # only the seeds not yet judged
    rows = store.candidates(first.run_id)
    assert sorted(Phase.of_row(r).index for r in rows) == [0, 1, 2, 3]
    assert store.get_run(first.run_id).summary["seeds_done"] is True


def test_two_processes_never_work_on_one_run(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    evaluate, _ = judge()
    first = search(store, evaluate)
    from kernelevo.search.resume import RunLock

    held = RunLock(first.dir, first.run_id).acquire()  # as another process working on the run would
    with pytest.raises(ResumeError, match="being worked on"):
        asyncio.run(search(store, evaluate, run_id=first.run_id).run())
    held.release()


def test_iteration_left_evaluating_is_finished_from_its_paid_answer(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    answers = [kernel_reply(CODE.format(n=i)) for i in range(3)]
    with serve_anthropic(answers) as server:
        provider = make_provider("anthropic", "claude-test", base_url=server.base_url, api_key="k")
        evaluate, _ = judge()
        first = search(
            store, evaluate, provider=provider, iterations=2, concurrency=2, repair_tries=0
        )
        asyncio.run(first.run())
    # what a kill leaves when iteration 1 finished while iteration 0 was still being judged
    row0 = next(
        r for r in store.candidates(first.run_id) if Phase.of_row(r) == Phase("iteration", 0)
    )
    store.delete_candidate(row0["id"])
    paid = {c["phase_index"]: c["response_text"] for c in store.llm_calls(first.run_id)}
    with serve_anthropic([kernel_reply(CODE.format(n=9))]) as server:
        provider = make_provider("anthropic", "claude-test", base_url=server.base_url, api_key="k")
        evaluate, seen = judge()
        again = search(
            store,
            evaluate,
            provider=provider,
            iterations=3,
            concurrency=2,
            repair_tries=0,
            run_id=first.run_id,
        )
        asyncio.run(again.run())
        assert len(server.posts()) == 1  # iteration 2 only
    assert extract_code(paid[0]) in seen  # judged again from the answer already paid for
    assert sorted(Phase.of_row(r).index for r in store.candidates(first.run_id)) == [0, 1, 2]
    assert len(store.llm_calls(first.run_id)) == 3


def test_wall_time_budget_does_not_restart_on_resume(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    evaluate, _ = judge()
    first = search(store, evaluate, wall_s=100.0)
    asyncio.run(first.run())
    run = store.get_run(first.run_id)
    store.update_run(first.run_id, summary={**run.summary, "elapsed_s": 70.0})
    again = search(store, evaluate, wall_s=100.0, run_id=first.run_id)
    asyncio.run(again.run())
    assert again.budget.wall_s == pytest.approx(30.0)
    assert store.get_run(first.run_id).summary["elapsed_s"] >= 70.0


def test_a_reply_cut_off_at_max_tokens_is_continued_and_both_calls_are_recorded(tmp_path):
    from fakes.scripted_server import Reply

    store = Store(tmp_path / "s.sqlite")
    whole = kernel_reply(CODE.format(n=1))
    cut = whole.index("pass") + 2  # cut inside a word, as a token limit does
    with serve_anthropic(
        [Reply(text=whole[:cut], stop_reason="max_tokens"), whole[cut:]]
    ) as server:
        provider = make_provider("anthropic", "claude-test", base_url=server.base_url, api_key="k")
        evaluate, seen = judge()
        run = search(
            store, evaluate, provider=provider, iterations=1, concurrency=1, repair_tries=0
        )
        asyncio.run(run.run())
        second = server.posts()[1].json["messages"]
    assert second[-1]["role"] == "assistant" and second[-1]["content"][0]["text"] == whole[:cut]
    assert seen == [CODE.format(n=1)]  # the continued reply was judged as one file
    assert len(store.llm_calls(run.run_id)) == 2


def test_with_thinking_on_a_cut_off_reply_is_repaired_not_continued(tmp_path):
    from fakes.scripted_server import Reply

    from kernelevo.llm import ModelSettings

    store = Store(tmp_path / "s.sqlite")
    whole = kernel_reply(CODE.format(n=2))
    with serve_anthropic(
        [Reply(text=whole[: whole.index("pass")], stop_reason="max_tokens"), whole]
    ) as server:
        provider = make_provider(
            "anthropic",
            "claude-test",
            base_url=server.base_url,
            api_key="k",
            settings=ModelSettings(max_tokens=8192, thinking_tokens=2048),
        )
        evaluate, seen = judge()
        asyncio.run(
            search(
                store, evaluate, provider=provider, iterations=1, concurrency=1, repair_tries=1
            ).run()
        )
        second = server.posts()[1].json["messages"]
    assert len(second) == 1 and second[0]["role"] == "user"  # a prefill with thinking on is a 400
    assert "cut off" in second[0]["content"][0]["text"] and seen == [CODE.format(n=2)]
