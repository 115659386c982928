"""What a verdict kept and what it would pass at, in the editor: the hover names the library ops
the kernel keeps; a run whose candidate passed only at TF32 tolerance offers "Accept TF32" (lens,
code action), which writes the `# kernelevo: precision = tf32` comment the engine reads."""

from __future__ import annotations

import time

import pytest
from lsp_harness import lens_titles, lenses, open_doc
from lsprotocol import types

from kernelevo.store import ResultSummary, Store

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(90)]

MESSAGE = (
    "relative L2 error 6.5e-04 above the fp32 bound 1e-05; passes at TF32 tolerance "
    "(rel. error 0.00065): accept lower precision with ALLOW_TF32 = True in the task or --allow-tf32"
)


def with_result(workspace, **fields):
    """rms_norm.py with a stored result of a search (written before the editor opens it)."""
    from kernelevo.targets.detect import detect_source

    path = workspace.copy_example("rms_norm.py")
    target = next(
        t for t in detect_source(path.read_text(), str(path)).targets if t.kind == "module"
    )
    workspace.store.parent.mkdir(parents=True, exist_ok=True)
    with Store(workspace.store) as store:
        store.put_result(
            ResultSummary(
                run_id="run-p1",
                source_file=str(path),
                target_id=target.id,
                created_at=time.time(),
                **fields,
            )
        )
    return path, target.id


async def hover_text(client, uri: str, path) -> str:
    lines = path.read_text().splitlines()
    line = next(i for i, t in enumerate(lines) if t.startswith("class Model"))
    got = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=len("class M")),
        )
    )
    return got.contents.value if got else ""


async def test_a_tf32_level_candidate_is_offered_with_one_click(client, workspace):
    offer = {"level": "tf32", "rel_l2": 6.5e-4, "message": MESSAGE}
    path, target_id = with_result(
        workspace,
        status="no_verified_candidate",
        outcome={"kind": "no_verified_candidate", "reasons": ["1 incorrect"]},
        precision_offer=offer,
    )
    uri = open_doc(client, path)
    titles = await lens_titles(client, uri)
    accept = "Accept TF32 (a kernel passes at rel. error 0.00065) and optimize again"
    assert titles == ["Optimize with KernelEvo", accept], titles
    (lens,) = [x for x in await lenses(client, uri) if x.command.title == accept]
    assert lens.command.command == "kernelevo.acceptPrecision"
    assert list(lens.command.arguments) == [uri, target_id, "tf32"]
    text = await hover_text(client, uri, path)
    assert "no verified candidate: 1 incorrect" in text
    assert "fails the fp32 bounds but passes at TF32 tolerance: " + MESSAGE in text
    assert "times eager PyTorch and torch.compile with TF32 too" in text
    # The code action (Neovim has no lens clicks of its own) runs the same command.
    pos = types.Position(line=lens.range.start.line, character=0)
    got = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=pos, end=pos),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    (action,) = [a for a in got or [] if getattr(a, "kind", None) == "quickfix.kernelevo.precision"]
    assert action.command.arguments == lens.command.arguments
    done = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="kernelevo.acceptPrecision", arguments=[uri, target_id, "tf32"]
        )
    )
    assert done == {"applied": True, "level": "tf32"}
    ((edit_uri, (text_edit,)),) = client.applied_edits[-1].edit.changes.items()
    lines = path.read_text().splitlines()
    assert edit_uri == uri and text_edit.new_text == "# kernelevo: precision = tf32\n"
    assert lines[text_edit.range.start.line].startswith("class Model")
    with pytest.raises(Exception, match="level tf32 or bf16"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="kernelevo.acceptPrecision", arguments=[uri, target_id, "fp8"]
            )
        )


async def test_the_hover_says_which_library_ops_the_kernel_keeps(client, workspace):
    split = "keeps the cuBLAS GEMM; bias, ReLU and scaling fused in one Triton kernel"
    path, _ = with_result(
        workspace,
        status="verified_unmeasured",
        verified=True,
        backend="triton",
        outcome={"kind": "verified_unmeasured", "device": "cpu"},
        kept_library_ops=["aten.addmm"],
        library_split=split,
    )
    uri = open_doc(client, path)
    text = await hover_text(client, uri, path)
    assert f"The kernel {split}." in text
    assert not any("Accept" in t for t in await lens_titles(client, uri))
