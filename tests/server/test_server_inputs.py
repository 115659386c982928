"""Example inputs asked of the user: after a search could not start for lack of them, the best
guess and the reason are offered (an input box in VS Code), and the answer is written where the
engine reads inputs, a `# kernelevo: inputs = ...` comment above the target."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_harness import open_doc, request
from lsprotocol import types

from kernelevo.targets.detect import analyze_source
from kernelevo.targets.inputs import _from_comments, guess_inputs
from kernelevo.targets.reference_call import resolve_reference

pytestmark = [pytest.mark.timeout(90)]

SOURCE = """import torch


class Scale(torch.nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor, table: dict) -> torch.Tensor:
        return torch.relu(x * self.w * table["scale"])
"""
TRIED = "no test or script in ws imports scale.py; guessing from the signature: none of 16 guessed input sets fits"


def test_the_guess_is_what_the_comments_route_reads(tmp_path):
    path = tmp_path / "scale.py"
    a = analyze_source(SOURCE, str(path))
    ref = resolve_reference(a, a.targets[0])
    g = guess_inputs(a, ref)
    assert (g.params, g.init_params) == (["x", "table"], ["dim"])
    lines = SOURCE.splitlines()
    at = g.line - 1
    recorded = "\n".join(lines[:at] + g.comment_lines() + lines[at:]) + "\n"
    a2 = analyze_source(recorded, str(path))
    found = _from_comments(a2, resolve_reference(a2, a2.targets[0]))
    assert found is not None and found.source == "comment"
    # the guessed sizes reach the task as named constants, shrunk for a CPU run and full on a GPU
    assert "torch.randn(8, _KERNELEVO_N1024), torch.randn(8, _KERNELEVO_N1024)" in found.code
    assert "_kernelevo_list((_KERNELEVO_N1024,))" in found.code
    assert found.small is not None and found.small.sizes == {1024: 64}


async def failed_for_inputs(client, workspace) -> tuple[Path, str, str]:
    path = workspace.root / "scale.py"
    path.write_text(SOURCE)
    message = (
        f"{path}:4: no example inputs for Scale; add `@kernelevo.example(...)` above it. "
        f"Tried without edits: {TRIED}"
    )
    workspace.control(mode="fail", iterations=1, delay=0.01, error_message=message)
    uri = open_doc(client, path)
    target_id = "module:Scale"
    got = await request(client, "kernelevo/optimize", {"uri": uri, "targetId": target_id})
    assert got["status"] == "failed"
    return path, uri, target_id


async def command(client, name: str, *args):
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(args))
    )


@pytest.mark.asyncio
async def test_the_guess_and_the_reason_are_offered_and_the_answer_recorded(client, workspace):
    _, uri, target_id = await failed_for_inputs(client, workspace)
    guess = await command(client, "kernelevo.exampleInputs", uri, target_id)
    assert guess["inputs"] == "(torch.randn(8, 1024), torch.randn(8, 1024))"
    assert guess["init"] == "(1024,)" and guess["params"] == ["x", "table"]
    assert guess["reason"] == TRIED and guess["targetName"] == "Scale"
    # A bad answer gets a one-line error and writes nothing.
    with pytest.raises(Exception, match="not a Python expression"):
        await command(client, "kernelevo.recordInputs", uri, target_id, "(torch.randn(8,", None)
    assert client.applied_edits == []
    answer = '(torch.randn(8, 64), {"scale": 2.0})'
    got = await command(client, "kernelevo.recordInputs", uri, target_id, answer, "(64,)")
    assert got["applied"] is True
    (edit,) = [e.edit for e in client.applied_edits]
    ((edit_uri, (text_edit,)),) = edit.changes.items()
    assert edit_uri == uri and text_edit.range.start.line == 3  # just above `class Scale`
    assert text_edit.new_text == (f"# kernelevo: inputs = {answer}\n# kernelevo: init = (64,)\n")
    assert any("recorded above it" in m.message for m in client.messages)


@pytest.mark.asyncio
async def test_a_client_without_an_input_box_gets_a_code_action(client, workspace):
    _, uri, _target = await failed_for_inputs(client, workspace)
    pos = types.Position(line=4, character=0)
    got = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=pos, end=pos),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    (action,) = [a for a in got or [] if getattr(a, "kind", None) == "quickfix.kernelevo.inputs"]
    assert "Record example inputs for Scale" in action.title
    done = await command(client, action.command.command, *action.command.arguments)
    assert done["inputs"] == "(torch.randn(8, 1024), torch.randn(8, 1024))"
    assert (
        client.applied_edits[-1]
        .edit.changes[uri][0]
        .new_text.startswith("# kernelevo: inputs = (torch.randn(8, 1024), torch.randn(8, 1024))\n")
    )
