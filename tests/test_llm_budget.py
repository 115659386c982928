"""Budgets: reserve/charge semantics, exact stopping, and bounded concurrency."""

from __future__ import annotations

import asyncio

import pytest
from fakes import Reply, serve_anthropic, slow
from fakes.env import clean_llm_env

from kernelevo.llm import Budget, BudgetExhausted, Prompt, Usage, estimate_tokens, make_provider
from kernelevo.llm.provider_config import LLMConfig

KEY = "sk-ant-budget-test-77aa"
PROMPT = Prompt.of("task " * 100, system="s" * 2000)
MAX_TOKENS = 200
RESERVATION = estimate_tokens(PROMPT) + MAX_TOKENS


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    clean_llm_env(monkeypatch, tmp_path)


def provider(server, **kw):
    return make_provider(
        "anthropic", base_url=server.base_url, api_key=KEY, config=LLMConfig(), **kw
    )


def test_reserve_refuses_what_does_not_fit_and_charge_replaces_the_reservation():
    b = Budget(tokens=1000)
    r1 = b.reserve(600)
    with pytest.raises(
        BudgetExhausted, match="the next call may use up to 600 tokens, 400 of 1,000 are left"
    ):
        b.reserve(600)
    assert b.exhausted() is None  # a call is in flight: it may free room
    b.charge(Usage(input_tokens=100, output_tokens=100), r1)
    assert b.used_tokens == 200 and b.reserved_tokens == 0
    r2 = b.reserve(600)
    b.release(r2)
    assert b.reserved_tokens == 0 and b.used_tokens == 200


def test_exhausted_after_a_refusal_with_nothing_in_flight():
    b = Budget(tokens=1000)
    b.charge(Usage(input_tokens=700))
    with pytest.raises(BudgetExhausted):
        b.reserve(400)
    assert b.exhausted().startswith("token budget: the next call may use up to 400 tokens")


def test_hard_limits_usd_wall_and_iterations():
    b = Budget(usd=1.0)
    b.charge(Usage(cost_usd=1.0))
    assert b.exhausted() == "cost budget spent: $1.0000 of $1.00"
    with pytest.raises(BudgetExhausted):
        b.reserve(1)

    now = [100.0]
    b = Budget(wall_s=60, clock=lambda: now[0])
    b.reserve(10)
    now[0] = 160.0
    assert b.exhausted() == "time budget spent: 60 s of 60 s"

    b = Budget(iterations=2)
    assert [b.start_iteration(), b.start_iteration()] == [1, 2]
    with pytest.raises(BudgetExhausted, match="iteration budget spent: 2 of 2"):
        b.start_iteration()


def test_time_spent_names_only_the_wall_limit():
    """The parameter search spends no tokens: it stops on time, not on a spent token budget."""
    now = [100.0]
    b = Budget(tokens=10, wall_s=60, clock=lambda: now[0])
    b.charge(Usage(input_tokens=10))
    assert b.exhausted() and b.time_spent() is None
    now[0] = 161.0
    assert b.time_spent() == "time budget spent: 61 s of 60 s"


def test_usd_reservation_uses_the_dearest_prices():
    b = Budget(usd=0.01)
    with serve_anthropic(default="ok") as server:
        p = provider(server)
        tokens, usd = p.estimate(PROMPT, MAX_TOKENS)
        assert tokens == RESERVATION
        assert usd == pytest.approx(
            (estimate_tokens(PROMPT) * 2.5 + MAX_TOKENS * 10.0) / 1e6
        )  # cache write, output
        asyncio.run(p.complete(PROMPT, max_tokens=MAX_TOKENS, budget=b))
    assert 0 < b.used_usd <= 0.01


def test_token_budget_stops_the_run_exactly_sequential():
    limit = 10_000
    b = Budget(tokens=limit)
    calls = 0

    async def search(p):
        nonlocal calls
        while b.exhausted() is None:
            try:
                await p.complete(PROMPT, max_tokens=MAX_TOKENS, budget=b)
                calls += 1
            except BudgetExhausted:
                pass

    with serve_anthropic(default="x" * 400) as server:  # 100 output tokens each
        asyncio.run(search(provider(server)))
    assert b.used_tokens <= limit  # never over
    assert limit - b.used_tokens < RESERVATION  # and stopped only when the next call could not fit
    assert calls == len(server.requests) > 5
    assert b.exhausted().startswith("token budget: the next call may use up to")


def test_token_budget_holds_with_many_proposals_in_flight():
    limit = 20_000
    b = Budget(tokens=limit)

    async def worker(p):
        while b.exhausted() is None:
            try:
                await p.complete(PROMPT, max_tokens=MAX_TOKENS, budget=b)
            except BudgetExhausted:
                await asyncio.sleep(0.005)  # others are in flight: they may free room

    async def search(p):
        await asyncio.gather(*(worker(p) for _ in range(8)))

    with serve_anthropic(default=slow(0.01, "x" * 400)) as server:
        asyncio.run(search(provider(server, max_concurrency=4)))
    assert b.used_tokens <= limit
    assert limit - b.used_tokens < RESERVATION
    assert 2 <= server.max_in_flight <= 4 and b.reserved_tokens == 0


def test_a_call_that_reports_more_than_estimated_stops_the_next_one():
    b = Budget(tokens=RESERVATION + 100)
    with serve_anthropic(default=Reply(text="ok", usage={"input_tokens": 5000})) as server:
        p = provider(server)
        asyncio.run(p.complete(PROMPT, max_tokens=MAX_TOKENS, budget=b))
        with pytest.raises(BudgetExhausted, match="token budget spent"):
            asyncio.run(p.complete(PROMPT, max_tokens=MAX_TOKENS, budget=b))
    assert len(server.requests) == 1
    assert b.exhausted().startswith("token budget spent")


def test_a_failed_call_gives_its_reservation_back():
    from fakes import error

    from kernelevo.llm import ProviderUnavailable

    b = Budget(tokens=100_000)
    with serve_anthropic(default=error(500)) as server:
        p = make_provider(
            "anthropic", base_url=server.base_url, api_key=KEY, config=LLMConfig(), max_retries=1
        )
        with pytest.raises(ProviderUnavailable):
            asyncio.run(p.complete(PROMPT, max_tokens=MAX_TOKENS, budget=b))
    assert b.reserved_tokens == 0 and b.used_tokens == 0


def test_concurrency_bound_is_respected():
    async def burst(p):
        return await asyncio.gather(*(p.complete(PROMPT, max_tokens=16) for _ in range(10)))

    with serve_anthropic(default=slow(0.1, "ok")) as server:
        results = asyncio.run(burst(provider(server, max_concurrency=3)))
    assert len(results) == 10
    assert server.max_in_flight == 3
