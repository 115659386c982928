"""Search jobs over LSP against a fake search child (tests/server/fakes/fake_search.py):
progress, results, cancellation (the child and its worker die), crash, GPU queueing."""

from __future__ import annotations

import asyncio
import json

import pytest
from lsp_harness import alive, eventually, lens_titles, lenses, open_doc, request
from lsprotocol import types

pytest.importorskip(
    "kernelevo.targets.detect", reason="needs kernelevo.targets.detect (target detection)"
)
pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(90)]


async def target_of(client, uri: str) -> str:
    return (await lenses(client, uri))[0].command.arguments[1]


def progress_kinds(client, token) -> list[str]:
    return [type(v).__name__ for v in client.progress_reports.get(token, [])]


def progress_messages(client, token) -> list[str]:
    return [getattr(v, "message", None) or "" for v in client.progress_reports.get(token, [])]


async def test_optimize_reports_progress_and_result(client, workspace):
    workspace.control(mode="improve", iterations=3, delay=0.05, speedup=2.31)
    path = workspace.copy_example("rms_norm.py")
    uri = open_doc(client, path)
    target_id = await target_of(client, uri)
    token = "tok-1"
    client.progress_reports[token] = []
    refreshes = client.lens_refreshes
    result = await request(
        client,
        "kernelevo/optimize",
        {"uri": uri, "targetId": target_id, "backend": "triton", "workDoneToken": token},
    )
    assert (
        result["status"] == "improved"
        and result["bestSpeedup"] == 2.31
        and result["runId"].startswith("fake-")
    )
    assert result["tokens"] == 3000 and result["costUsd"] == pytest.approx(0.03)
    kinds = progress_kinds(client, token)
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    reports = [
        v.message
        for v in client.progress_reports[token]
        if isinstance(v, types.WorkDoneProgressReport)
    ]
    # The search's own per-candidate message (it names the phase), then where the search stands.
    assert "iteration 3 of 3 (llm): verified, 2.31x · best 2.31x · 3.0k tokens · $0.03" in reports
    # The share of the model iterations the search planned (its progress events carry them).
    done_share = [
        v.percentage
        for v in client.progress_reports[token]
        if isinstance(v, types.WorkDoneProgressReport) and v.message.startswith("iteration")
    ]
    assert done_share[:3] == [33, 66, 100] and set(done_share[3:]) <= {100}
    # The run ends with the engine's outcome sentence (kernelevo/outcome.py).
    assert result["outcome"]["kind"] == "improved"
    assert (
        client.progress_reports[token][-1].message
        == result["message"]
        == "verified, 2.31x faster than eager PyTorch, beats torch.compile (1.50x)"
    )
    assert client.progress_reports[token][0].cancellable is True
    # The child got the documented command line and the store location.
    sent = json.loads(workspace.pidfile.read_text())
    assert sent["argv"][2:] == [
        f"{path}::{target_id}",
        "--progress",
        "json",
        "--backend",
        "triton",
        "--provider",
        "offline",
    ]
    assert sent["env_store"] == str(workspace.store)
    # Lenses show the new result (after a refresh where the client supports it).
    titles = await eventually(lambda: _has_result(client, uri))
    assert titles[1] == "2.31x faster Triton kernel (CPU) — Show diff"
    if client.client_name == "visual-studio-code":
        await eventually(lambda: client.lens_refreshes > refreshes)
    jobs = await request(client, "kernelevo/jobs", None)
    assert [(j["state"], j["status"], j["targetId"]) for j in jobs] == [
        ("done", "improved", target_id)
    ]


async def test_starting_a_job_waits_for_no_analysis(client, workspace):
    """The request's target id goes to the search as it is: a file the editor never opened is
    optimized without the server analysing it (no analysis worker is even started)."""
    workspace.control(mode="improve", iterations=1, delay=0.01, speedup=2.31)
    uri = workspace.copy_example("rms_norm.py").as_uri()
    result = await request(client, "kernelevo/optimize", {"uri": uri, "targetId": "module:Model"})
    assert result["status"] == "improved", result
    argv = json.loads(workspace.pidfile.read_text())["argv"]
    assert argv[argv.index("--progress") - 1].endswith("rms_norm.py::module:Model")
    info = await request(client, "kernelevo/debugInfo")
    assert info["documents"] == [] and info["analysisWorkerPid"] is None, info


async def test_a_kernel_faster_than_eager_only_is_not_offered(client, workspace):
    """1.3x vs eager but 0.9x vs torch.compile: the engine's outcome is no_improvement, so no Show
    diff / Apply (a test of speedup_eager > 1 alone offered it) and the end says why."""
    workspace.control(mode="improve", iterations=1, delay=0.01, speedup=1.3, compile_speedup=0.9)
    path = workspace.copy_example("rms_norm.py")
    uri = open_doc(client, path)
    target_id = await target_of(client, uri)
    result = await request(client, "kernelevo/optimize", {"uri": uri, "targetId": target_id})
    assert result["status"] == "no_improvement" and result["outcome"]["applicable"] is False
    assert result["message"] == "verified, no faster kernel: slower than torch.compile (0.90x)"
    await asyncio.sleep(0.5)
    titles = await lens_titles(client, uri)
    assert titles == ["Optimize with KernelEvo"], titles
    start = (await lenses(client, uri))[0].range.start
    got = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=start, end=start),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert not [
        a for a in got or [] if getattr(a, "kind", "") == "refactor.rewrite.kernelevo.apply"
    ]
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=start.line, character=7),
        )
    )
    assert "verified, no faster kernel: slower than torch.compile (0.90x)" in hover.contents.value


async def _has_result(client, uri):
    titles = await lens_titles(client, uri)
    return titles if len(titles) == 3 else None


async def test_cancelling_the_request_stops_the_child_and_its_worker(client, workspace):
    workspace.control(mode="slow", iterations=500, delay=0.1, worker=True)
    uri = open_doc(client, workspace.copy_example("rms_norm.py"))
    target_id = await target_of(client, uri)
    fut = client.protocol.send_request(
        "kernelevo/optimize", {"uri": uri, "targetId": target_id}, msg_id="opt-1"
    )
    pids = await eventually(
        lambda: workspace.pidfile.exists() and json.loads(workspace.pidfile.read_text())
    )
    assert alive(pids["pid"]) and alive(pids["worker"])
    running = await request(client, "kernelevo/jobs", None)
    assert running[0]["state"] == "running"
    client.cancel_request(types.CancelParams(id="opt-1"))
    with pytest.raises(Exception, match="cancel"):
        await asyncio.wait_for(asyncio.wrap_future(fut), 15)
    await eventually(lambda: not alive(pids["pid"]) and not alive(pids["worker"]), timeout=10)
    jobs = await request(client, "kernelevo/jobs", None)
    assert jobs[0]["state"] == "cancelled"
    assert (await lens_titles(client, uri)) == ["Optimize with KernelEvo"]


async def test_cancel_request_and_progress_cancel_stop_command_jobs(client, workspace):
    workspace.control(mode="slow", iterations=500, delay=0.1)
    uri = open_doc(client, workspace.copy_example("rms_norm.py"))
    target_id = await target_of(client, uri)
    started = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelevo.optimize", arguments=[uri, target_id, "auto"])
    )
    job_id = started["jobId"]
    pids = await eventually(
        lambda: workspace.pidfile.exists() and json.loads(workspace.pidfile.read_text())
    )
    titles = await eventually(lambda: _optimizing(client, uri))
    assert titles[0].startswith("KernelEvo: optimizing… ") and titles[0].endswith("— Cancel")
    got = await request(client, "kernelevo/cancel", {"jobId": job_id})
    assert got["cancelled"] is True
    await eventually(lambda: not alive(pids["pid"]))
    token = f"kernelevo-job-{job_id}"
    await eventually(lambda: progress_kinds(client, token)[-1:] == ["WorkDoneProgressEnd"])
    assert (await request(client, "kernelevo/cancel", {"jobId": job_id}))["cancelled"] is False

    # A second job, stopped from the progress UI's Cancel button.
    workspace.control(mode="slow", iterations=500, delay=0.1)
    started = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelevo.optimize", arguments=[uri, target_id, "auto"])
    )
    pids = await eventually(
        lambda: workspace.pidfile.exists() and json.loads(workspace.pidfile.read_text())
    )
    client.window_work_done_progress_cancel(
        types.WorkDoneProgressCancelParams(token=f"kernelevo-job-{started['jobId']}")
    )
    await eventually(lambda: not alive(pids["pid"]))


async def test_a_cancelled_job_says_cancelling_until_its_search_has_stopped(client, workspace):
    """A search takes a moment to stop (it closes its workers): in that moment the lens and the
    progress say "cancelling…", not the job's last progress, and Optimize comes back after."""
    workspace.control(mode="slow", iterations=500, delay=0.1, term_delay=2.0)
    uri = open_doc(client, workspace.copy_example("rms_norm.py"))
    target_id = await target_of(client, uri)
    started = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kernelevo.optimize", arguments=[uri, target_id, "auto"])
    )
    pids = await eventually(
        lambda: workspace.pidfile.exists() and json.loads(workspace.pidfile.read_text())
    )
    await eventually(lambda: _optimizing(client, uri))
    got = await request(client, "kernelevo/cancel", {"jobId": started["jobId"]})
    assert got["cancelled"] is True
    assert (await lens_titles(client, uri)) == ["KernelEvo: cancelling…"]
    assert alive(pids["pid"]), "the search is still stopping"
    token = f"kernelevo-job-{started['jobId']}"
    await eventually(lambda: "cancelling…" in progress_messages(client, token))
    await eventually(lambda: not alive(pids["pid"]), timeout=10)

    async def optimize_again():
        titles = await lens_titles(client, uri)
        return titles == ["Optimize with KernelEvo"] or None

    await eventually(optimize_again, timeout=10)


async def _optimizing(client, uri):
    titles = await lens_titles(client, uri)
    return titles if titles and "optimizing" in titles[0] else None


async def test_a_crashing_search_fails_its_job_and_the_server_carries_on(client, workspace):
    workspace.control(mode="crash", iterations=3, delay=0.01)
    uri = open_doc(client, workspace.copy_example("rms_norm.py"))
    target_id = await target_of(client, uri)
    result = await request(client, "kernelevo/optimize", {"uri": uri, "targetId": target_id})
    assert result["status"] == "failed"
    assert "code 3" in result["message"] and "fake search blew up" in result["message"]
    await eventually(lambda: any("failed" in m.message for m in client.messages))
    assert (await lens_titles(client, uri)) == ["Optimize with KernelEvo"]
    # It still serves and can run the next job.
    workspace.control(mode="improve", iterations=1, delay=0.01)
    result = await request(client, "kernelevo/optimize", {"uri": uri, "targetId": target_id})
    assert result["status"] == "improved"


async def test_jobs_queue_per_gpu(client, workspace):
    workspace.control(mode="slow", iterations=500, delay=0.1)
    a = open_doc(client, workspace.copy_example("rms_norm.py"))
    b = open_doc(client, workspace.copy_example("bias_gelu_scale.py"))
    targets = {uri: await target_of(client, uri) for uri in (a, b)}
    for uri in (a, b):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="kernelevo.optimize", arguments=[uri, targets[uri], "auto"]
            )
        )
    jobs = await eventually(lambda: _states(client, {"running", "queued"}))
    assert sorted(j["state"] for j in jobs) == ["queued", "running"]
    # Same target twice is refused, not queued.
    with pytest.raises(Exception, match="already being optimized"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="kernelevo.optimize", arguments=[a, targets[a], "auto"]
            )
        )
    for j in jobs:
        await request(client, "kernelevo/cancel", {"jobId": j["jobId"]})
    await eventually(lambda: _states(client, {"cancelled"}))


async def _states(client, wanted):
    jobs = await request(client, "kernelevo/jobs", None)
    return jobs if len(jobs) == 2 and {j["state"] for j in jobs} == wanted else None
