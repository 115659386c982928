"""What Apply put into the workspace, and taking it back out when the user undoes it.

Whether a target holds an applied kernel is read from its own text: the guard line Apply writes
names the run (`kernelevo.targets.apply_templates.applied_run_id`). So the lenses say "applied"
after a server restart too, and for a kernel applied with `kernelevo apply` in a terminal.

The files an Apply created (the kernel module, its regression test) are remembered per user file
in the store's folder (`applied.json`). Once the user's file has shown the rewrite and an undo
brings it back to its text before Apply, those files are deleted again, through the client's
own delete operation where it has one, but only while they still hold what Apply wrote (or
nothing, as an undone buffer does): a file the user changed since is kept and named.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path

from kernelevo.atomic_write import write_atomic
from kernelevo.targets.apply_templates import applied_run_id

if TYPE_CHECKING:
    from kernelevo_server.analyzer import DocState, TargetInfo
    from kernelevo_server.app import KernelEvoServer
    from kernelevo_server.planned_edit import Proposal

logger = logging.getLogger(__name__)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def applied_run(server: KernelEvoServer, path: str, target: TargetInfo) -> str | None:
    """The run whose kernel `target`'s text calls (its Apply guard), or None."""
    lines = server.applications.lines_of(path)
    return applied_run_id(lines[max(target.start_line, 0) : target.end_line + 1])


@dataclass
class Application:
    """One Apply of a run to a target, until it is undone."""

    user_path: str
    target_id: str
    run_id: str
    before: str  # digest of the user file's text just before Apply
    created: dict[str, str] = field(default_factory=dict)  # new file -> digest of what Apply wrote
    seen: bool = False  # the rewrite was seen in the user's file


class Applications:
    """The remembered Applies of a workspace, kept as JSON beside the store."""

    def __init__(self, server: KernelEvoServer) -> None:
        self.server = server
        self._loaded_from: Path | None = None
        self._items: list[Application] = []
        self._checking: set[str] = set()
        self._lines: tuple[str, object, list[str]] | None = None

    def lines_of(self, path: str) -> list[str]:
        """The file's current lines (the editor's text when open), split once per version."""
        got = self.server._text_of(from_fs_path(path) or path)
        if got is None:
            return []
        text, version, _ = got
        if self._lines is None or self._lines[:2] != (path, version):
            self._lines = (path, version, text.splitlines())
        return self._lines[2]

    @property
    def path(self) -> Path:
        return self.server.results.store_path.parent / "applied.json"

    def _load(self) -> list[Application]:
        if self._loaded_from != self.path:
            self._loaded_from = self.path
            try:
                raw = json.loads(self.path.read_text(encoding="utf-8"))
                self._items = [Application(**a) for a in raw if isinstance(a, dict)]
            except (OSError, ValueError, TypeError):
                self._items = []
        return self._items

    def _save(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps([asdict(a) for a in self._items], indent=1))
        except OSError as exc:
            logger.warning("cannot record the applied kernel in %s: %s", self.path, exc)

    def remember(self, proposal: Proposal) -> None:
        """Called when an Apply edit is handed to the client (it may still decline it)."""
        user = os.path.realpath(self.server.path_of(proposal.uri))
        own = next((f for f in proposal.files if os.path.realpath(f.path) == user), None)
        if own is None:
            return
        created = {f.path: digest(f.new_text) for f in proposal.files if not f.exists}
        items = [
            a
            for a in self._load()
            if not (a.user_path == user and a.target_id == proposal.target.id)
        ]
        items.append(
            Application(
                user, proposal.target.id, proposal.result.run_id, digest(own.current), created
            )
        )
        self._items = items
        self._save()

    def landed(self, uri: str, target_id: str, run_id: str) -> None:
        """The client says it applied the edit (VS Code's `kernelevo.applied`, an applyEdit reply)."""
        user = os.path.realpath(self.server.path_of(uri))
        for a in self._load():
            if (a.user_path, a.target_id, a.run_id) == (user, target_id, run_id) and not a.seen:
                a.seen = True
                self._save()

    def document_analyzed(self, st: DocState) -> None:
        user = os.path.realpath(st.path)
        if user in self._checking or not any(a.user_path == user for a in self._load()):
            return
        self._checking.add(user)
        task = asyncio.get_running_loop().create_task(self._check(user, st.uri))
        task.add_done_callback(lambda _: self._checking.discard(user))

    async def _check(self, user: str, uri: str) -> None:
        got = self.server._text_of(uri)
        if got is None:
            return
        text, changed = got[0], False
        for a in [a for a in self._load() if a.user_path == user]:
            if not a.seen and any(applied_run_id([line]) == a.run_id for line in text.splitlines()):
                a.seen = changed = True
            elif a.seen and digest(text) == a.before:
                self._items.remove(a)
                changed = True
                await self._remove_created(a)
        if changed:
            self._save()

    async def _remove_created(self, a: Application) -> None:
        """Undo brought the user's file back: delete what Apply created and nobody changed."""
        gone: list[str] = []
        kept: list[str] = []
        for path, wrote in a.created.items():
            if not os.path.exists(path):
                continue
            texts = {_disk_text(path)}
            doc = self.server.open_document(from_fs_path(path) or path)
            if doc is not None:
                texts.add(doc.source)
            untouched = all(t is None or t == "" or digest(t) == wrote for t in texts)
            (gone if untouched else kept).append(path)
        if gone:
            await self._delete(gone)
            names = ", ".join(os.path.basename(p) for p in gone)
            self.server.show(f"undo removed {names}, created by Apply of run {a.run_id}")
        for path in kept:
            self.server.show(
                f"kept {os.path.basename(path)} (created by Apply of run {a.run_id}): it changed "
                "since; delete it yourself if you do not need it",
                types.MessageType.Warning,
            )

    async def _delete(self, paths: list[str]) -> None:
        if self.server.supports_resource_operation(types.ResourceOperationKind.Delete):
            edit = types.WorkspaceEdit(
                document_changes=[
                    types.DeleteFile(
                        uri=from_fs_path(p) or p,
                        options=types.DeleteFileOptions(ignore_if_not_exists=True),
                    )
                    for p in paths
                ]
            )
            try:
                result = await self.server.workspace_apply_edit_async(
                    types.ApplyWorkspaceEditParams(edit=edit, label="KernelEvo: undo Apply")
                )
                if getattr(result, "applied", False):
                    return
            except Exception as exc:
                logger.info("the client did not delete the files: %s", exc)
        for p in paths:
            try:
                os.remove(p)
            except OSError as exc:
                logger.warning("cannot delete %s: %s", p, exc)


def _disk_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None
