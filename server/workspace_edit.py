"""Turn a Proposal into an LSP `WorkspaceEdit` that this client can apply.

With `documentChanges`/resource operations: a `CreateFile` for the new kernel module and
versioned `TextDocumentEdit`s, all under one change annotation that labels the change (not
`needsConfirmation`: VS Code then opens its Refactor Preview with every change unchecked, and
the user has reviewed the diff already). Clients without them get a plain `changes` map.
"""

from __future__ import annotations

from typing import cast

from kernelevo_server.planned_edit import FileChange, Proposal
from lsprotocol import types

ANNOTATION_ID = "kernelevo.apply"


def _col(line: str, encoding: str) -> int:
    line = line.rstrip("\r\n")
    if encoding == types.PositionEncodingKind.Utf8:
        return len(line.encode("utf-8"))
    if encoding == types.PositionEncodingKind.Utf32:
        return len(line)
    return len(line.encode("utf-16-le")) // 2


def _position(lines: list[str], line: int, encoding: str) -> types.Position:
    if line < len(lines) or (lines and lines[-1].endswith(("\n", "\r"))) or not lines:
        return types.Position(line=line, character=0)
    return types.Position(line=len(lines) - 1, character=_col(lines[-1], encoding))


def text_edits(
    f: FileChange, encoding: str, annotated: bool
) -> list[types.TextEdit | types.AnnotatedTextEdit]:
    lines = f.current.splitlines(keepends=True)
    out: list[types.TextEdit | types.AnnotatedTextEdit] = []
    for e in f.edits:
        rng = types.Range(
            start=_position(lines, e.start, encoding), end=_position(lines, e.end, encoding)
        )
        text = e.text
        if e.start >= len(lines) and lines and not lines[-1].endswith(("\n", "\r")) and text:
            text = "\n" + text  # appending after a last line that has no line break
        if annotated:
            out.append(
                types.AnnotatedTextEdit(range=rng, new_text=text, annotation_id=ANNOTATION_ID)
            )
        else:
            out.append(types.TextEdit(range=rng, new_text=text))
    return out


def build(
    proposal: Proposal, caps: types.ClientCapabilities | None, encoding: str
) -> types.WorkspaceEdit:
    ws = getattr(caps, "workspace", None) if caps else None
    we = getattr(ws, "workspace_edit", None) if ws else None
    resource_ops = list(getattr(we, "resource_operations", None) or [])
    doc_changes = (
        bool(getattr(we, "document_changes", False))
        or types.ResourceOperationKind.Create in resource_ops
    )
    annotated = bool(getattr(we, "change_annotation_support", None)) and doc_changes
    if not doc_changes:
        return types.WorkspaceEdit(
            changes={
                f.uri: cast(list[types.TextEdit], text_edits(f, encoding, False))
                for f in proposal.files
                if f.edits
            }
        )
    changes: list = []
    for f in proposal.files:
        if not f.exists:
            changes.append(
                types.CreateFile(
                    uri=f.uri,
                    options=types.CreateFileOptions(overwrite=False, ignore_if_exists=False),
                    annotation_id=ANNOTATION_ID if annotated else None,
                )
            )
        if not f.edits:
            continue
        changes.append(
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=f.uri, version=f.version
                ),
                edits=text_edits(f, encoding, annotated),
            )
        )
    annotations = None
    if annotated:
        r = proposal.result
        annotations = {
            ANNOTATION_ID: types.ChangeAnnotation(
                label=proposal.title,
                needs_confirmation=False,
                description=f"Verified kernel from run {r.run_id}; a new module and the rewrite of "
                f"{proposal.target.name}.",
            )
        }
    return types.WorkspaceEdit(document_changes=changes, change_annotations=annotations)
