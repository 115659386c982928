"""Degrading gracefully: syntax errors, settings that must be ignored, diagnostics that
stay off until asked for, and a server process that never loads torch."""

from __future__ import annotations

import asyncio
import sys

import pytest
import pytest_lsp
from lsp_harness import (
    Workspace,
    edit_doc,
    eventually,
    lens_titles,
    lenses,
    open_doc,
    request,
    start_session,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

pytest.importorskip(
    "kernelevo.targets.detect", reason="needs kernelevo.targets.detect (target detection)"
)
pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(90)]


async def test_a_file_with_a_syntax_error(client, workspace):
    path = workspace.root / "broken.py"
    path.write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x:\n        return x\n"
    )
    uri = open_doc(client, path)
    assert await lenses(client, uri) == []
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=2, character=7),
        )
    )
    assert hover is None
    assert (await request(client, "kernelevo/debugInfo"))["pid"]


async def test_a_syntax_error_keeps_the_last_lenses_and_blocks_actions(client, workspace):
    path = workspace.copy_example("rms_norm.py")
    uri = open_doc(client, path)
    good = await lens_titles(client, uri)
    target_id = (await lenses(client, uri))[0].command.arguments[1]
    n = len(path.read_text().splitlines())
    edit_doc(client, uri, 2, n, "def broken(:\n")  # append a syntax error at the end
    await eventually(lambda: _degraded(client, uri))
    assert await lens_titles(client, uri) == good
    # The broken text is unsaved, and the search reads the file from disk: refused before it starts.
    with pytest.raises(Exception, match=r"save rms_norm\.py first"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="kernelevo.optimize", arguments=[uri, target_id, "auto"]
            )
        )
    edit_doc(client, uri, 3, n, "", end_line=n + 1)
    path.write_text(path.read_text())  # saved text equals the buffer again
    result = await request(client, "kernelevo/optimize", {"uri": uri, "targetId": target_id})
    assert result["status"] == "improved"


async def _degraded(client, uri):
    docs = (await request(client, "kernelevo/debugInfo"))["documents"]
    doc = next((d for d in docs if d["uri"] == uri), {})
    return any("syntax" in e for e in doc.get("errors", []))


async def test_unsaved_file_is_not_optimized(client, workspace):
    path = workspace.copy_example("rms_norm.py")
    uri = open_doc(client, path)
    target_id = (await lenses(client, uri))[0].command.arguments[1]
    edit_doc(client, uri, 2, 0, "# unsaved\n")
    with pytest.raises(Exception, match=r"save rms_norm\.py first"):
        await request(client, "kernelevo/optimize", {"uri": uri, "targetId": target_id})
    assert not workspace.pidfile.exists()


async def test_api_keys_and_commands_from_workspace_settings_are_ignored(client, workspace):
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={
                "kernelevo": {
                    "anthropicApiKey": "sk-secret",
                    "searchCommand": ["/bin/false"],
                    "diagnostics": True,
                    "model": "m1",
                }
            }
        )
    )
    await eventually(lambda: len([m for m in client.messages if "ignored" in m.message]) >= 2)
    info = await request(client, "kernelevo/debugInfo")
    assert info["settings"]["diagnostics"] is True and info["settings"]["model"] == "m1"
    assert "sk-secret" not in str(info)
    uri = open_doc(client, workspace.copy_example("rms_norm.py"))
    target_id = (await lenses(client, uri))[0].command.arguments[1]
    result = await request(client, "kernelevo/optimize", {"uri": uri, "targetId": target_id})
    assert result["status"] == "improved"  # still the command from initializationOptions
    assert "--model" in (argv := __import__("json").loads(workspace.pidfile.read_text())["argv"])
    assert argv[argv.index("--model") + 1] == "m1"


async def test_diagnostics_are_off_by_default_and_informational(client, workspace):
    uri = open_doc(client, workspace.copy_example("rms_norm.py"))
    await lenses(client, uri)
    assert not client.diagnostics.get(uri)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"kernelevo": {"diagnostics": True}})
    )
    diags = await eventually(lambda: client.diagnostics.get(uri))
    assert [d.severity for d in diags] == [types.DiagnosticSeverity.Information]
    assert diags[0].message == (
        "At least 3 separate kernels launched here (mean, pow, rsqrt); "
        "a fused kernel is likely faster"
    )
    assert diags[0].source == "kernelevo" and diags[0].range.start.line == 17
    # The store changing (a search writes it per candidate) does not re-send unchanged diagnostics.
    sent = client.publishes[uri]
    for _ in range(5):
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(uri=workspace.store.as_uri(), type=types.FileChangeType.Changed)
                ]
            )
        )
        await asyncio.sleep(0.3)
    await lenses(client, uri)
    assert client.publishes[uri] == sent
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"kernelevo": {"diagnostics": False}})
    )
    await eventually(lambda: len(client.diagnostics.get(uri, [None])) == 0)


async def test_generated_files_get_no_diagnostics(client, workspace):
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"kernelevo": {"diagnostics": True}})
    )
    path = workspace.copy_example("rms_norm.py")
    generated = path.with_name("test_rms_norm_kernelevo_model.py")
    generated.write_text(
        '"""Regression test for KernelEvo\'s kernel for Model (run r1), generated by `kernelevo apply`."""\n'
        + path.read_text()
    )
    plain, gen = open_doc(client, path), open_doc(client, generated)
    await eventually(lambda: client.diagnostics.get(plain))
    await eventually(lambda: gen in client.publishes)
    assert list(client.diagnostics.get(gen)) == []


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "kernelevo", "serve"])
)
async def cli_client(lsp_client: LanguageClient, workspace: Workspace):
    await start_session(lsp_client, "visual-studio-code", workspace)
    yield
    await lsp_client.shutdown_session()


async def test_kernelevo_serve_never_imports_torch(cli_client, workspace):
    client = cli_client
    path = workspace.copy_example("rms_norm.py")
    uri = open_doc(client, path)
    target_id = (await lenses(client, uri))[0].command.arguments[1]
    await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=17, character=7),
        )
    )
    result = await request(client, "kernelevo/optimize", {"uri": uri, "targetId": target_id})
    assert result["status"] == "improved"
    await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=17, character=0), end=types.Position(line=17, character=0)
            ),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    await eventually(lambda: _lens_count(client, uri, 3))
    info = await request(client, "kernelevo/debugInfo")
    assert info["heavyModules"] == []


async def _lens_count(client, uri, n):
    return len(await lenses(client, uri)) == n
