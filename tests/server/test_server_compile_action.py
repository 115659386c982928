"""When torch.compile beats the user's code clearly and our best kernel only ties it, the light
bulb offers wrapping the target with @torch.compile, with what that costs (its first call compiles)."""

from __future__ import annotations

import pytest
from lsp_harness import open_doc
from lsprotocol import types

from kernelevo.store import ResultSummary, Store
from kernelevo.targets.detect import detect_file

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(90)]

COMPILE = "refactor.rewrite.kernelevo.torchCompile"
SOURCE = (
    "import torch\nimport torch.nn.functional as F\n\n\ndef new_gelu(x):\n"
    "    return 0.5 * x * (1.0 + torch.tanh(0.79788456 * (x + 0.044715 * torch.pow(x, 3.0))))\n"
)


def _result(path, target_id: str, compile_ms: float) -> ResultSummary:
    return ResultSummary(
        run_id="r1",
        source_file=str(path),
        target_id=target_id,
        status="no_improvement",
        backend="triton",
        gpu="NVIDIA H200",
        reference_ms=8.9,
        compile_ms=compile_ms,
        best_ms=1.0,
        speedup_eager=8.9,
        speedup_compile=compile_ms / 1.0,
        verified=True,
        candidate_path="c.py",
    )


async def _actions(client, uri: str, line: int) -> list[types.CodeAction]:
    pos = types.Position(line=line, character=0)
    got = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=pos, end=pos),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    return [a for a in (got or []) if isinstance(a, types.CodeAction)]


async def test_torch_compile_action_wraps_the_target_and_states_its_cost(client, workspace):
    path = workspace.root / "gelu.py"
    path.write_text(SOURCE)
    workspace.store.parent.mkdir(parents=True, exist_ok=True)
    Store(workspace.store).put_result(
        _result(path, detect_file(str(path)).targets[0].id, compile_ms=1.0)
    )
    uri = open_doc(client, path)
    actions = [a for a in await _actions(client, uri, 5) if a.kind == COMPILE]
    assert len(actions) == 1
    action = actions[0]
    assert action.title.startswith(
        "Wrap new_gelu with torch.compile: 8.9x faster than your code here"
    )
    assert "first call compiles" in action.title
    edits = action.edit.changes[uri]
    assert [e.range.start.line for e in edits] == [4]
    assert edits[0].new_text.startswith(
        "@torch.compile  # KernelEvo: torch.compile makes this 8.9x faster"
    )


async def test_no_torch_compile_action_when_torch_compile_is_not_clearly_faster(client, workspace):
    path = workspace.root / "gelu.py"
    path.write_text(SOURCE)
    workspace.store.parent.mkdir(parents=True, exist_ok=True)
    Store(workspace.store).put_result(
        _result(path, detect_file(str(path)).targets[0].id, compile_ms=7.5)
    )  # 1.2x
    uri = open_doc(client, path)
    assert not [a for a in await _actions(client, uri, 5) if a.kind == COMPILE]
