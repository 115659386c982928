"""Recording completions and replaying them: deterministic and free reruns; request hashes."""

from __future__ import annotations

import asyncio
import json

import pytest
from fakes import serve_anthropic
from fakes.env import clean_llm_env

from kernelevo.llm import Budget, LLMError, Message, Prompt, SystemPart, make_provider, request_hash
from kernelevo.llm.provider_config import LLMConfig

A = Prompt.of("optimise A", system="sys", reference="ref")
B = Prompt.of("optimise B", system="sys", reference="ref")


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    clean_llm_env(monkeypatch, tmp_path)


def test_request_hash_is_stable_and_content_only():
    h = request_hash(A, "m")
    assert (
        h == request_hash(Prompt.of("optimise A", system="sys", reference="ref"), "m")
        and len(h) == 64
    )
    assert h != request_hash(B, "m") and h != request_hash(A, "other")
    uncached = Prompt(
        system=(SystemPart("sys"), SystemPart("ref")), messages=(Message("user", "optimise A"),)
    )
    assert request_hash(uncached, "m") == h  # cache marks do not change the answer
    # pinned: a change here breaks every recorded replay file
    assert (
        request_hash(Prompt.of("x"), "m")
        == "9bf56f087fadcf4fdaf3ba8792a5ca0e8695dd278fbc88701d71403afc61433e"
    )


def test_record_then_replay_by_hash(tmp_path):
    log = tmp_path / "run.jsonl"
    with serve_anthropic(["answer A", "answer B"]) as server:
        live = make_provider(
            "anthropic",
            base_url=server.base_url,
            api_key="sk-ant-rec-1234",
            config=LLMConfig(),
            record_to=log,
        )

        async def go():
            return [await live.complete(A, max_tokens=8), await live.complete(B, max_tokens=8)]

        recorded = asyncio.run(go())
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["request_hash"] for x in lines] == [
        request_hash(A, "claude-sonnet-5-5"),
        request_hash(B, "claude-sonnet-5-5"),
    ]
    replay = make_provider("replay", replay_file=log, config=LLMConfig())
    budget = Budget(tokens=10**6)

    async def again():  # asked in the other order: answered by hash, not by position
        return [
            await replay.complete(B, max_tokens=8, budget=budget),
            await replay.complete(A, max_tokens=8),
        ]

    b, a = asyncio.run(again())
    assert (a.text, b.text) == ("answer A", "answer B")
    assert a.usage == recorded[0].usage and b.provider == "replay"
    assert budget.used_tokens == recorded[1].usage.total_tokens  # replays charge the recorded usage
    with pytest.raises(LLMError, match="has no response left"):
        asyncio.run(replay.complete(A, max_tokens=8))


def test_replay_in_order_when_lines_have_no_hash(tmp_path):
    log = tmp_path / "plain.jsonl"
    log.write_text(
        '{"text": "one", "usage": {"input_tokens": 5, "output_tokens": 1}}\n\n{"text": "two"}\n'
    )
    p = make_provider("replay", "m", replay_file=log, config=LLMConfig())

    async def go():
        return [(await p.complete(A)).text, (await p.complete(A)).text]

    assert asyncio.run(go()) == ["one", "two"]


def test_replay_file_from_the_environment_and_bad_lines(tmp_path, monkeypatch):
    log = tmp_path / "bad.jsonl"
    log.write_text('{"text": "ok"}\nnot json\n')
    monkeypatch.setenv("KERNELEVO_REPLAY_FILE", str(log))
    with pytest.raises(LLMError, match=r"bad.jsonl:2: not JSON"):
        make_provider("replay", config=LLMConfig())
    with pytest.raises(LLMError, match="does not exist"):
        make_provider("replay", replay_file=tmp_path / "none.jsonl", config=LLMConfig())


def test_paced_replay_takes_the_recorded_latency(tmp_path):
    import time

    from kernelevo.llm.replay import ReplayProvider

    log = tmp_path / "paced.jsonl"
    log.write_text('{"text": "a", "latency_s": 0.3}\n{"text": "b"}\n')
    p = ReplayProvider(log, pace=True)
    t0 = time.monotonic()
    first = asyncio.run(p.complete(Prompt.of("x")))
    assert time.monotonic() - t0 >= 0.3 and first.latency_s == 0.3
    assert asyncio.run(ReplayProvider(log).complete(Prompt.of("x"))).latency_s == 0.0
