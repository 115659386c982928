"""Helpers for the end-to-end tests: a temporary workspace holding example files, client
recorders for server-to-client requests, and small LSP conveniences."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Union

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

HERE = Path(__file__).parent
REPO = HERE.parent.parent
FAKE_SEARCH = HERE / "fakes" / "fake_search.py"
SERVER = [sys.executable, "-m", "kernelevo", "serve", "--stdio"]
CLIENTS = {"vscode": "visual-studio-code", "neovim": "neovim"}


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.store = root / ".kernelevo" / "store.sqlite"
        self.control_path = root / "control.json"
        self.pidfile = root / "search.pid.json"
        self.control(mode="improve")

    def copy_example(self, name: str) -> Path:
        dst = self.root / name
        shutil.copy(REPO / "examples" / name, dst)
        return dst

    def control(self, **ctl: Any) -> None:
        ctl.setdefault("pidfile", str(self.pidfile))
        self.control_path.write_text(json.dumps(ctl))
        if self.pidfile.exists():
            self.pidfile.unlink()

    def init_options(self, real_search: bool = False, **extra: Any) -> dict[str, Any]:
        opts: dict[str, Any] = {"provider": "offline"}
        if not real_search:
            opts["searchCommand"] = [
                sys.executable,
                str(FAKE_SEARCH),
                "--control",
                str(self.control_path),
            ]
        opts.update(extra)
        return {"kernelevo": opts}


def fix_code_action_decoding(client: LanguageClient) -> None:
    """lsprotocol reads any code action that carries a `command` as a bare Command; tell them
    apart by the type of `command` (a string for a Command, an object for a CodeAction)."""
    conv = client.protocol._converter

    def hook(obj: Any, _: Any) -> Any:
        kind = types.Command if isinstance(obj.get("command"), str) else types.CodeAction
        return conv.structure(obj, kind)

    # lsprotocol declares the field as typing.Union, which cattrs matches exactly
    conv.register_structure_hook(Union[types.Command, types.CodeAction], hook)  # noqa: UP007


def add_recorders(client: LanguageClient) -> None:
    """Handlers for the server-to-client requests the tests observe."""
    fix_code_action_decoding(client)
    client.lens_refreshes = 0
    client.registrations = []
    client.applied_edits = []

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params: Any) -> None:
        client.lens_refreshes += 1

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)

    @client.feature(types.CLIENT_UNREGISTER_CAPABILITY)
    def _unregister(params: Any) -> None:
        return None

    client.publishes = {}

    stored = client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def _diagnostics(params: types.PublishDiagnosticsParams) -> None:  # pytest-lsp's, plus a count
        client.publishes[params.uri] = client.publishes.get(params.uri, 0) + 1
        return stored(params)

    client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _diagnostics

    client.message_requests = []
    client.confirm_with = "Apply"

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def _ask(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        client.message_requests.append(params)
        titles = [a.title for a in params.actions or []]
        return (
            types.MessageActionItem(title=client.confirm_with)
            if client.confirm_with in titles
            else None
        )

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def _apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        client.applied_edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)


async def start_session(
    client: LanguageClient, caps_name: str, ws: Workspace, **options: Any
) -> None:
    add_recorders(client)
    client.client_name = caps_name
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(caps_name),
            root_uri=ws.root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=ws.root.as_uri(), name="ws")],
            initialization_options=ws.init_options(**options),
        )
    )


def open_doc(client: LanguageClient, path: Path, text: str | None = None, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri,
                language_id="python",
                version=version,
                text=path.read_text() if text is None else text,
            )
        )
    )
    return uri


def edit_doc(
    client: LanguageClient,
    uri: str,
    version: int,
    line: int,
    text: str,
    end_line: int | None = None,
) -> None:
    """Replace lines [line, end_line) (or insert at `line`) with `text`."""
    end = line if end_line is None else end_line
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line=line, character=0),
                        end=types.Position(line=end, character=0),
                    ),
                    text=text,
                )
            ],
        )
    )


async def lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    return list(
        await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        or []
    )


async def eventually(
    check: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if asyncio.iscoroutine(got):
            got = await got
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await asyncio.sleep(interval)


async def lens_titles(client: LanguageClient, uri: str) -> list[str]:
    return [lens.command.title for lens in await lenses(client, uri) if lens.command]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] not in "ZX"
    except (OSError, IndexError):
        return False


async def request(client: LanguageClient, method: str, params: Any = None) -> Any:
    """A custom request's result as plain JSON values (pygls hands back namedtuples)."""
    from kernelevo_server.params import plain

    return plain(await client.protocol.send_request_async(method, params))
