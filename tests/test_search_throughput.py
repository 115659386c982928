"""Requests in flight derived from measured reply and verdict times; an unpriced model with a
dollar budget refused before any call."""

import asyncio

import pytest
from fakes.anthropic_server import serve_anthropic
from fakes.env import clean_llm_env

from kernelevo.llm import LLMError, make_provider
from kernelevo.llm.config import LLMConfig
from kernelevo.llm.prices import check_priced
from kernelevo.search.throughput import Throughput


def test_in_flight_keeps_the_slots_80_percent_busy_within_limits():
    t = Throughput(slots=1, highest=32)
    assert t.target() == 9  # nothing measured yet: a 20 s reply and a 2 s verdict assumed
    asyncio.run(t.saw_reply(20.0))
    asyncio.run(t.saw_verdict(1.0))
    assert t.target() == 17  # ceil(0.8 * 1 * 21 / 1)
    assert Throughput(slots=8, highest=32, reply_s=20.0, verdict_s=1.0).target() == 32
    assert Throughput(slots=1, fixed=3, reply_s=20.0, verdict_s=1.0).target() == 3


def test_admission_waits_for_a_free_place():
    async def scenario():
        t = Throughput(slots=1, fixed=1)
        await t.admit()
        second = asyncio.create_task(t.admit())
        await asyncio.sleep(0.01)
        assert not second.done()
        await t.done()
        await asyncio.wait_for(second, 1.0)

    asyncio.run(scenario())


def test_dollar_budget_for_an_unpriced_model_is_refused_with_what_to_add(monkeypatch, tmp_path):
    clean_llm_env(monkeypatch, tmp_path)
    with serve_anthropic([]) as server:
        p = make_provider(
            "anthropic",
            "claude-from-the-future",
            base_url=server.base_url,
            api_key="k",
            config=LLMConfig(),
        )
        with pytest.raises(
            LLMError, match=r'add \[prices\."claude-from-the-future"\] with input = and output ='
        ):
            check_priced(p, 5.0, "/home/me/.config/kernelevo/config.toml")
        check_priced(p, None, "x")  # no dollar budget: nothing to refuse
        priced = make_provider(
            "anthropic",
            "claude-sonnet-5-5",
            base_url=server.base_url,
            api_key="k",
            config=LLMConfig(),
        )
        check_priced(priced, 5.0, "x")
    assert server.posts() == []


def test_a_429_halves_the_requests_in_flight_and_quiet_calls_raise_them_again(
    monkeypatch, tmp_path
):
    from fakes.scripted_server import error

    from kernelevo.llm import Budget, Prompt
    from kernelevo.phase import Phase
    from kernelevo.search.asking import Asker
    from kernelevo.store import Store

    clean_llm_env(monkeypatch, tmp_path)
    store = Store(tmp_path / "s.sqlite")
    rid = store.create_run(task_path="t.py", task_hash="h", config={})
    t = Throughput(slots=1, highest=32, reply_s=20.0, verdict_s=1.0)
    t.active = 16
    with serve_anthropic(
        [error(429, "rate limited"), "one", "two", "three", "four", "five"]
    ) as server:
        p = make_provider(
            "anthropic",
            "claude-sonnet-5-5",
            base_url=server.base_url,
            api_key="k",
            config=LLMConfig(),
        )
        asker = Asker(p, store, rid, Budget(), t)
        asyncio.run(asker.ask(Prompt.of("x"), Phase("iteration", 0)))
        assert t.cap == 8 and t.target() == 8  # half of the 16 open when the 429 came
        for i in range(1, 5):
            asyncio.run(asker.ask(Prompt.of("x"), Phase("iteration", i)))
    assert t.cap == 9
