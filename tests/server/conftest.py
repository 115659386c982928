"""End-to-end fixtures: the real server over stdio, driven by pytest-lsp with the VS Code
and Neovim client capability sets, on a temporary workspace holding example files."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsp_harness import CLIENTS, SERVER, Workspace, start_session
from pytest_lsp import ClientServerConfig, LanguageClient


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    return Workspace(root)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER), params=list(CLIENTS))
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest, workspace: Workspace):
    await start_session(lsp_client, CLIENTS[request.param], workspace)
    yield
    await lsp_client.shutdown_session()
