"""Every failure class goes back to the model: a `rejected` candidate with the rule it broke and
the library ops it dispatched, a `timeout` with the time limit, then a verified one. Model calls
go to the local Anthropic protocol server; candidates are judged by a plain function that
returns the verdicts the judge gives for these failures (what is checked is the loop)."""

import asyncio
import json

from fakes.anthropic_server import serve_anthropic
from fakes.scripted_server import kernel_reply
from support import EXAMPLES

from kernelevo.llm import make_provider
from kernelevo.search.loop import Search, SearchConfig
from kernelevo.search.prompt import PromptBuilder, TaskContext
from kernelevo.store import Store
from kernelevo.task import read_task
from kernelevo.verdict import Check, Verdict

TASK = read_task(EXAMPLES / "softmax.py")
RULE = "the candidate calls the reference op(s) aten::_softmax itself"
LIMIT = "time limit of 120 s reached; the worker was stopped (infinite loop or hang?)"


def verdicts():
    rejected = Verdict(
        "rejected",
        RULE,
        backend="triton",
        checks=[
            Check("library_ops", False, "calls the reference op", {"banned": ["aten::_softmax"]})
        ],
    )
    rejected.library_ops = ["aten::_softmax", "aten::empty_like"]
    return [
        rejected,
        Verdict("timeout", LIMIT, backend="triton"),
        Verdict("verified", "ok", backend="triton"),
    ]


def test_rejected_and_timed_out_kernels_go_back_with_what_to_fix(tmp_path):
    script = verdicts()

    def evaluate(path, seed):
        return script.pop(0)

    answers = [kernel_reply(f"class ModelNew:\n    pass  # {i}\n") for i in range(3)]
    store = Store(tmp_path / "s.sqlite")
    with serve_anthropic(answers) as server:
        provider = make_provider("anthropic", "claude-test", base_url=server.base_url, api_key="k")
        builder = PromptBuilder(
            TaskContext(task_name="softmax", reference=TASK.source, hardware="test", baselines="-")
        )
        search = Search(
            TASK,
            SearchConfig(provider="anthropic", iterations=1, repair_tries=2, tune_evals=0),
            store=store,
            evaluate=evaluate,
            provider=provider,
            builder=builder,
            workdir=tmp_path,
        )
        result = asyncio.run(search.run())
        posts = [json.dumps(p.json["messages"]) for p in server.posts()]
    assert result.counts == {"rejected": 1, "timeout": 1, "verified": 1}
    assert len(posts) == 3
    assert "failed (rejected)" in posts[1] and RULE in posts[1]
    assert "aten::_softmax, aten::empty_like" in posts[1]  # the library ops seen
    assert "failed (timeout)" in posts[2] and "120 s" in posts[2]
    assert "#1 (llm): rejected" in posts[2]  # the earlier attempt from the same start, in one line
