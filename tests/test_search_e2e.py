"""`kernelevo optimize` against real local HTTP servers speaking the providers' protocols.

The CLI runs in a subprocess and talks through the real anthropic/openai SDKs to
scripted servers on 127.0.0.1; candidates run in the Triton interpreter on small shapes.
"""

import json
import os
import signal
import time

from fakes.anthropic_server import serve_anthropic
from fakes.openai_server import serve_openai
from fakes.scripted_server import Reply, error, kernel_reply, slow
from support import CANDIDATES, EXAMPLES, run_kernelevo

from kernelevo.store import Store

SOFTMAX = EXAMPLES / "softmax.py"
GOOD = (CANDIDATES / "softmax" / "triton_ok.py").read_text()
BROKEN = GOOD.replace("def forward(self, x", "def forward(self x", 1)  # a syntax error
WRONG = (
    GOOD.replace("tl.exp(", "tl.exp(1.0001 * ", 1)
    if "tl.exp(" in GOOD
    else GOOD.replace("/", "*", 1)
)
# one column short: the last element of each row is left out of the sum (every value a little off)
ONE_OFF = GOOD.replace(
    "x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask",
    "x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols - 1",
    1,
)
KEY_CHECK = GOOD.replace(
    "class ModelNew",
    "import os\nassert os.environ.get('ANTHROPIC_API_KEY') is None, 'key leaked'\n\n\nclass ModelNew",
    1,
)


def optimize(tmp_path, server_env, *args, timeout=600, wait=True, seeds=False):
    return run_kernelevo(
        [
            "optimize",
            SOFTMAX,
            "--device",
            "cpu",
            "--progress",
            "json",
            "--concurrency",
            "1",
            *([] if seeds else ["--no-offline-seeds"]),
            "--json-out",
            tmp_path / "out.json",
            *args,
        ],
        tmp_path,
        server_env,
        wait=wait,
        timeout=timeout,
    )


def anthropic_env(server):
    return {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "sk-ant-test"}


def claude(tmp_path, server, *args, iterations=1, repair_tries=None, model="claude-test", **kw):
    """`kernelevo optimize` asking the scripted Anthropic `server` for `iterations` iterations."""
    tries = [] if repair_tries is None else ["--repair-tries", str(repair_tries)]
    return optimize(
        tmp_path,
        anthropic_env(server),
        *("--provider", "anthropic", "--model", model, "--iterations", str(iterations)),
        *tries,
        *args,
        **kw,
    )


def summary(tmp_path, r):
    """The run's --json-out summary, once the command has succeeded."""
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads((tmp_path / "out.json").read_text())


def store_of(tmp_path):
    return Store(tmp_path / ".kernelevo" / "store.sqlite")


def events(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_compile_error_fed_back_and_repaired(tmp_path):
    with serve_anthropic(
        [kernel_reply(BROKEN), kernel_reply(GOOD)], default=kernel_reply(GOOD)
    ) as server:
        r = claude(tmp_path, server)
    out = summary(tmp_path, r)
    posts = server.posts()
    assert len(posts) == 2
    repair = json.dumps(posts[1].json)
    assert "syntax error" in repair and "forward(self x" in repair
    sys_blocks = posts[0].json["system"]
    assert any(
        b.get("cache_control") for b in sys_blocks
    )  # stable prefix marked for prompt caching
    assert out["candidates"] == {"compile_error": 1, "verified": 1}
    assert out["best_candidate"] is not None and out["tokens"] > 0
    ev = events(r.stdout)
    assert ev[0]["event"] == "start" and ev[-1]["event"] == "done"
    progress = [e for e in ev if e["event"] == "progress"]
    assert [(e["phase"], e["index"], e["total"], e["status"]) for e in progress] == [
        ("iteration", 1, 1, "compile_error"),
        ("repair", 1, 1, "verified"),
    ]
    assert progress[1]["message"] == "iteration 1 of 1, repair 1 of 3 (repair): verified"
    assert all(e["iteration"] >= 0 for e in progress)


def test_best_verified_selected_and_budget_stops_exactly(tmp_path):
    script = [kernel_reply(WRONG), kernel_reply(GOOD), kernel_reply(WRONG)]
    with serve_anthropic(script, default=kernel_reply(GOOD)) as server:
        r = claude(tmp_path, server, iterations=3, repair_tries=0)
    out = summary(tmp_path, r)
    assert len(server.posts()) == 3  # exactly the iteration budget
    assert out["candidates"] == {"incorrect": 2, "verified": 1}
    store = store_of(tmp_path)
    best = next(c for c in store.candidates(out["run_id"]) if c["id"] == out["best_candidate"])
    assert best["status"] == "verified" and best["source"].strip() == GOOD.strip()


def test_token_budget_is_never_exceeded(tmp_path):
    with serve_anthropic([], default=kernel_reply(WRONG)) as server:
        r = claude(tmp_path, server, "--budget-tokens", "30000", iterations=50, repair_tries=0)
    out = summary(tmp_path, r)
    assert out["tokens"] <= 30000
    assert "budget" in out["stop_reason"]
    assert 0 < len(server.posts()) < 50


def test_rate_limit_then_success_retried(tmp_path):
    with serve_anthropic(
        [error(429, retry_after=0), kernel_reply(GOOD)], default=kernel_reply(GOOD)
    ) as server:
        r = claude(tmp_path, server)
    assert summary(tmp_path, r)["candidates"] == {"verified": 1}
    assert len(server.posts()) == 2


def test_openai_compatible_endpoint(tmp_path):
    with serve_openai([kernel_reply(GOOD)], default=kernel_reply(GOOD)) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        r = optimize(
            tmp_path, env, "--provider", "openai", "--model", "gpt-test", "--iterations", "1"
        )
    assert summary(tmp_path, r)["candidates"] == {"verified": 1}
    assert server.posts()[0].json["model"] == "gpt-test"


def test_bad_key_is_a_clear_error(tmp_path):
    with serve_anthropic([error(401, "invalid x-api-key")]) as server:
        r = claude(tmp_path, server)
    assert r.returncode == 1
    assert "ANTHROPIC_API_KEY" in r.stderr and "sk-ant-test" not in r.stderr + r.stdout


def test_candidate_reading_the_environment_is_refused_and_the_key_is_stored_nowhere(tmp_path):
    """A model's kernel that looks for the key is refused before it runs (imports are allowlisted);
    the isolation of workers that do run is the sandbox's tests' subject."""
    with serve_anthropic([kernel_reply(KEY_CHECK)], default=kernel_reply(KEY_CHECK)) as server:
        r = claude(tmp_path, server, repair_tries=0)
    out = summary(tmp_path, r)
    assert out["candidates"] == {"rejected": 1}
    store = store_of(tmp_path)
    stored = json.dumps(store.candidates(out["run_id"])) + json.dumps(
        store.llm_calls(out["run_id"])
    )
    assert "import of os is not allowed" in stored and "sk-ant-test" not in stored


def test_killed_run_resumes_without_repeating_paid_calls(tmp_path):
    # iteration 0 answers at once; iteration 1's answer is slow, so the run is killed while waiting for it
    script = [kernel_reply(WRONG), slow(60, kernel_reply(GOOD))]
    with serve_anthropic(script, default=kernel_reply(GOOD)) as server:
        proc = claude(tmp_path, server, iterations=3, repair_tries=0, wait=False)
        store = store_of(tmp_path)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and len(server.posts()) < 2:
            time.sleep(0.2)
        assert len(server.posts()) == 2, (
            proc.stderr.read() if proc.poll() is not None else "server saw too few calls"
        )
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        run_id = store.list_runs(1)[0].id
        paid_before = len(store.llm_calls(run_id))
        assert paid_before == 1 and len(store.candidates(run_id)) == 1
    with serve_anthropic([], default=kernel_reply(GOOD)) as server2:
        r = optimize(tmp_path, anthropic_env(server2), "--resume", run_id)
    out = summary(tmp_path, r)
    assert (
        len(server2.posts()) == 2
    )  # iterations 1 and 2 only; iteration 0's paid answer was not asked again
    calls = store.llm_calls(run_id)
    assert sorted((c["phase"], c["phase_index"], c["attempt"]) for c in calls) == [
        ("iteration", 0, 0),
        ("iteration", 1, 0),
        ("iteration", 2, 0),
    ]
    assert out["run_id"] == run_id and out["candidates"] == {"incorrect": 1, "verified": 2}


def test_offline_results_seed_the_llm_population(tmp_path):
    with serve_anthropic([], default=kernel_reply(GOOD)) as server:
        r = claude(tmp_path, server, model="m", seeds=True)
    out = summary(tmp_path, r)
    first = json.dumps(server.posts()[0].json)
    assert (
        "The kernel to start from" in first
    )  # the model starts from the best offline kernel, not from scratch
    store = store_of(tmp_path)
    origins = {c["origin"] for c in store.candidates(out["run_id"])}
    assert any(o.startswith("template:") for o in origins) and "llm" in origins


def test_incorrect_kernel_is_repaired_from_the_mismatch_feedback(tmp_path):
    """The scripted model fixes its kernel only when the repair request says where the output went
    wrong and by how much: the run ends verified because the feedback carried that."""
    seen = []

    def model(req):
        body = json.dumps(req.json)
        seen.append(body)
        if len(seen) == 1:
            return kernel_reply(ONE_OFF)
        told = "first wrong element at [" in body and "expected " in body and ", got " in body
        return kernel_reply(GOOD if told else ONE_OFF)

    with serve_anthropic(model) as server:
        r = claude(tmp_path, server, repair_tries=1)
    out = summary(tmp_path, r)
    assert out["candidates"] == {"incorrect": 1, "verified": 1}
    repair = json.loads(seen[1])["messages"]
    assert (
        len(repair) == 1 and repair[0]["role"] == "user"
    )  # one message, not the conversation so far
    assert (
        repair[0]["content"][0]["text"].count("class ModelNew") == 1
    )  # the failed file quoted once
    statuses = [(e["phase"], e["status"]) for e in events(r.stdout) if e["event"] == "progress"]
    assert statuses == [("iteration", "incorrect"), ("repair", "verified")]


def test_an_empty_reply_is_never_sent_back_and_a_failed_call_does_not_end_the_run(tmp_path):
    script = [
        Reply(text=""),
        kernel_reply(GOOD),
        error(400, "prompt is too long: 300000 tokens > 200000 maximum"),
    ]
    with serve_anthropic(script, default=kernel_reply(GOOD)) as server:
        r = claude(tmp_path, server, iterations=3, repair_tries=1)
    out = summary(tmp_path, r)
    bodies = [p.json for p in server.posts()]
    assert all(
        b["messages"][-1]["role"] == "user" for b in bodies
    )  # the strict fake would 400 an empty turn
    assert out["iterations"] == 3 and out["candidates"] == {"verified": 2}
    progress = [e for e in events(r.stdout) if e["event"] == "progress"]
    assert [e["status"] for e in progress] == ["no_code", "verified", "model_error", "verified"]
    assert "prompt is too long" in progress[2]["message"]
