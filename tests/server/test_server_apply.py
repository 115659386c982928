"""Apply a verified kernel: a lazily resolved, confirmable WorkspaceEdit rebuilt on the
document's current (unsaved) text, and refused once the target changed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types
from lsprotocol.converters import get_converter

from lsp_harness import edit_doc, eventually, lenses, open_doc, request

pytest.importorskip("kernelevo.targets.detect", reason="needs kernelevo.targets.detect (target detection)")
pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(90)]

APPLY = "refactor.rewrite.kernelevo.apply"


def apply_text_edits(text: str, edits: list) -> str:
    """Apply LSP edits (whole-line positions here) to text."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def off(p) -> int:
        return min(offsets[min(p["line"], len(lines))] + p["character"], len(text))

    for e in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
                    reverse=True):
        text = text[:off(e["range"]["start"])] + e["newText"] + text[off(e["range"]["end"]):]
    return text


def _shift(edits: list, by: int) -> list:
    out = []
    for e in edits:
        r = e["range"]
        out.append({"newText": e["newText"], "range": {
            "start": {"line": r["start"]["line"] + by, "character": r["start"]["character"]},
            "end": {"line": r["end"]["line"] + by, "character": r["end"]["character"]}}})
    return out


async def optimized(client, workspace) -> tuple[Path, str, str, dict]:
    """A file whose target has a verified result from a (fake) search."""
    workspace.control(mode="improve", iterations=1, delay=0.01, speedup=2.31)
    path = workspace.copy_example("rms_norm.py")
    uri = open_doc(client, path)
    first = (await lenses(client, uri))[0]
    target_id = first.command.arguments[1]
    result = await request(client, "kernelevo/optimize", {"uri": uri, "targetId": target_id})
    assert result["status"] == "improved"
    return path, uri, target_id, result


async def actions_at(client, uri: str, line: int) -> list[types.CodeAction]:
    pos = types.Position(line=line, character=0)
    got = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=pos, end=pos),
        context=types.CodeActionContext(diagnostics=[])))
    return list(got or [])


def as_json(obj) -> dict:
    return get_converter().unstructure(obj)


async def test_apply_is_resolved_lazily_against_the_current_text(client, workspace):
    path, uri, target_id, result = await optimized(client, workspace)
    saved = path.read_text()
    start = (await lenses(client, uri))[0].range.start.line
    # Unsaved edit above the target: the rewrite must land two lines lower.
    edit_doc(client, uri, 2, 0, "# a note\n# another\n")
    current = "# a note\n# another\n" + saved
    actions = await actions_at(client, uri, start + 2)
    kinds = {a.kind: a for a in actions}
    assert set(kinds) == {"source.kernelevo.optimize", APPLY}
    assert kinds["source.kernelevo.optimize"].command.command == "kernelevo.optimize"
    action = kinds[APPLY]
    assert action.edit is None and "2.31x faster" in action.title  # resolved later
    resolved = await client.code_action_resolve_async(action)
    edit = as_json(resolved.edit)
    changes = edit["documentChanges"]
    creates = [c for c in changes if c.get("kind") == "create"]
    assert creates and all(c["uri"].endswith(".py") and c["uri"] != uri for c in creates)
    # Nothing is written before the user confirms.
    assert not any(Path(c["uri"][len("file://"):]).exists() for c in creates)
    doc_edits = {c["textDocument"]["uri"]: c for c in changes if "textDocument" in c}
    assert doc_edits[uri]["textDocument"]["version"] == 2
    created = {c["uri"]: apply_text_edits("", doc_edits[c["uri"]]["edits"]) for c in creates}
    (new_uri,) = [u for u, text in created.items() if "@triton.jit" in text]  # the kernel module
    compile(created[new_uri], "kernel_module.py", "exec")  # the created kernel module is valid Python
    rewritten = apply_text_edits(current, doc_edits[uri]["edits"])
    assert rewritten.startswith("# a note\n# another\n") and rewritten != current
    compile(rewritten, "rms_norm.py", "exec")
    assert Path(new_uri).stem in rewritten  # the target now calls into the new module
    # Planned on the saved file, landed on the edited buffer: the same change, two lines lower.
    assert rewritten == "# a note\n# another\n" + apply_text_edits(saved, _shift(doc_edits[uri]["edits"], -2))
    if client.client_name == "visual-studio-code":
        note = edit["changeAnnotations"]
        assert list(note.values())[0]["needsConfirmation"] is True
        assert creates[0]["annotationId"] in note
        assert all(e.get("annotationId") in note for c in doc_edits.values() for e in c["edits"])
    else:
        assert "changeAnnotations" not in edit  # Neovim does not declare change annotation support
    # The proposal request (the client's diff view) describes the same change.
    prop = await request(client, "kernelevo/proposal", {"uri": uri, "targetId": target_id})
    files = {f["uri"]: f for f in prop["files"]}
    assert prop["runId"] == result["runId"]
    assert files[uri]["oldText"] == current and files[uri]["newText"] == rewritten
    assert all(files[u]["oldText"] == "" and files[u]["newText"] == text for u, text in created.items())


async def test_apply_command_sends_a_workspace_edit(client, workspace):
    path, uri, target_id, result = await optimized(client, workspace)
    got = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="kernelevo.apply", arguments=[uri, target_id, result["runId"]]))
    assert got["applied"] is True
    (params,) = client.applied_edits
    assert "KernelEvo" in params.label
    assert any(isinstance(c, types.CreateFile) for c in params.edit.document_changes)


async def test_show_diff_command_opens_a_diff(client, workspace):
    path, uri, target_id, result = await optimized(client, workspace)
    got = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="kernelevo.showDiff", arguments=[uri, target_id, result["runId"]]))
    diff = Path(got["diffUri"][len("file://"):]).read_text()
    assert "+++ b/" in diff and "@triton.jit" in diff
    assert client.shown_documents[-1].uri == got["diffUri"]


async def test_a_stale_result_is_refused(client, workspace):
    path, uri, target_id, result = await optimized(client, workspace)
    start = (await lenses(client, uri))[0].range.start.line
    (action,) = [a for a in await actions_at(client, uri, start) if a.kind == APPLY]
    # Change the target's own text (unsaved): the search optimised other code.
    lines = path.read_text().splitlines(keepends=True)
    body = next(i for i, line in enumerate(lines) if "return x * rms" in line)
    edit_doc(client, uri, 2, body, "        return x * rms * self.weight * 2.0\n", end_line=body + 1)
    with pytest.raises(Exception, match="changed since the search"):
        await client.code_action_resolve_async(action)
    with pytest.raises(Exception, match="changed since the search"):
        await request(client, "kernelevo/proposal", {"uri": uri, "targetId": target_id})
    assert any("changed since" in m.message for m in client.messages)

    async def listed():
        found = [a for a in await actions_at(client, uri, start) if a.kind == APPLY]
        if client.client_name == "visual-studio-code":
            return found and found[0].disabled is not None and "changed since" in found[0].disabled.reason
        return not found  # no disabledSupport: the action is left out
    await eventually(listed)
    # Undoing the change makes it applicable again.
    edit_doc(client, uri, 3, body, lines[body], end_line=body + 1)
    prop = await request(client, "kernelevo/proposal", {"uri": uri, "targetId": target_id})
    assert prop["runId"] == result["runId"]


async def test_a_refused_apply_writes_nothing(client, workspace):
    path, uri, target_id, result = await optimized(client, workspace)
    before = sorted(p.name for p in path.parent.iterdir())
    edit_doc(client, uri, 2, 0, "", end_line=len(path.read_text().splitlines()))  # delete everything
    with pytest.raises(Exception, match="no target"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="kernelevo.apply", arguments=[uri, target_id, result["runId"]]))
    assert client.applied_edits == []
    assert sorted(p.name for p in path.parent.iterdir()) == before
    assert json.loads(workspace.pidfile.read_text())  # only the search ran
