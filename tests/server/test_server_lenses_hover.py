"""Lenses and hover on a real example file, before and after a result lands in the store
(written by another process, as a CLI run would)."""

from __future__ import annotations

import asyncio
import time

import pytest
from lsp_harness import eventually, lens_titles, lenses, open_doc
from lsprotocol import types

from kernelevo.store import ResultSummary, Store

pytest.importorskip(
    "kernelevo.targets.detect", reason="needs kernelevo.targets.detect (target detection)"
)
pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


async def hover_at(client, uri: str, line: int, character: int):
    return await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
        )
    )


def class_line(path, name: str) -> tuple[int, int]:
    for i, line in enumerate(path.read_text().splitlines()):
        if line.startswith(f"class {name}"):
            return i, len("class ") + 1
    raise AssertionError(name)


def write_result(ws, path, target_id: str, source_hash: str, speedup: float = 2.31) -> str:
    cand = ws.root / ".kernelevo" / "cand.py"
    cand.parent.mkdir(parents=True, exist_ok=True)
    cand.write_text("class ModelNew: pass\n")
    with Store(ws.store) as store:
        run_id = store.create_run(
            task_path=str(path),
            task_hash="h",
            config={},
            source_file=str(path),
            target_id=target_id,
            source_hash=source_hash,
        )
        store.put_result(
            ResultSummary(
                run_id=run_id,
                source_file=str(path),
                target_id=target_id,
                status="improved",
                backend="triton",
                gpu="NVIDIA H200",
                created_at=time.time(),
                reference_ms=0.412,
                compile_ms=0.301,
                best_ms=0.178,
                speedup_eager=speedup,
                speedup_compile=1.69,
                achieved_gbps=3712.0,
                roofline_fraction=0.88,
                tokens=48200,
                cost_usd=0.31,
                verified=True,
                candidate_path=str(cand),
            )
        )
    return run_id


async def test_lenses_and_hover_without_results(client, workspace):
    path = workspace.copy_example("rms_norm.py")
    uri = open_doc(client, path)
    got = await lenses(client, uri)
    line, col = class_line(path, "Model")
    assert [(lens.range.start.line, lens.command.title, lens.command.command) for lens in got] == [
        (line, "Optimize with KernelEvo", "kernelevo.optimize")
    ]
    assert got[0].command.arguments[0] == uri and got[0].command.arguments[2] == "auto"
    hover = await hover_at(client, uri, line, col)
    assert hover is not None and hover.contents.kind == types.MarkupKind.Markdown
    assert "not optimized yet" in hover.contents.value
    assert "x faster" not in hover.contents.value and "ms" not in hover.contents.value
    assert await hover_at(client, uri, line + 3, 8) is None  # inside the body, not on the name
    assert not workspace.store.exists(), "opening a file must not create the store"


async def test_result_from_another_process_appears(client, workspace):
    path = workspace.copy_example("rms_norm.py")
    uri = open_doc(client, path)
    first = await lenses(client, uri)
    target_id = first[0].command.arguments[1]
    from kernelevo.targets.detect import detect_source

    target = next(
        t for t in detect_source(path.read_text(), str(path)).targets if t.id == target_id
    )
    refreshes = client.lens_refreshes
    run_id = write_result(workspace, path, target_id, target.source_hash)
    if client.client_name == "visual-studio-code":
        # VS Code watches files for us: the server registers a watcher for the store (after
        # `initialized`, so on a loaded machine it may come a moment after the first lenses)
        for _ in range(100):
            watchers = [
                w
                for r in client.registrations
                if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
                for w in r.register_options["watchers"]
            ]
            if any("store.sqlite" in str(w["globPattern"]) for w in watchers):
                break
            await asyncio.sleep(0.1)
        assert any("store.sqlite" in str(w["globPattern"]) for w in watchers)
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(
                        uri=(workspace.store.parent / "store.sqlite-wal").as_uri(),
                        type=types.FileChangeType.Changed,
                    )
                ]
            )
        )
        await eventually(lambda: client.lens_refreshes > refreshes)
    titles = await eventually(lambda: _with_result(client, uri))
    assert titles == [
        "Optimize with KernelEvo",
        "2.31x faster Triton kernel (H200) — Show diff",
        "Apply",
    ]
    lens = (await lenses(client, uri))[1]
    assert lens.command.command == "kernelevo.showDiff" and list(lens.command.arguments) == [
        uri,
        target_id,
        run_id,
    ]
    line, col = class_line(path, "Model")
    text = (await hover_at(client, uri, line, col)).contents.value
    for fact in (
        "2.31x faster Triton kernel (H200)",
        "0.412 ms",
        "0.301 ms",
        "0.178 ms",
        "1.69x vs torch.compile",
        "3.71 TB/s",
        "88% of roofline",
        "NVIDIA H200",
        "48.2k tokens",
        "$0.31",
        run_id,
    ):
        assert fact in text, (fact, text)


async def _with_result(client, uri):
    titles = await lens_titles(client, uri)
    return titles if len(titles) > 1 else None
