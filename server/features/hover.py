"""Hover on a target's name: its latest measured result as Markdown, or "not optimized yet"."""

from __future__ import annotations

from kernelevo_server.app import KernelEvoServer
from kernelevo_server.applied import applied_run
from kernelevo_server.features.precision import offer_markdown
from kernelevo_server.present import hover_markdown
from lsprotocol import types


def register(server: KernelEvoServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: KernelEvoServer, params: types.HoverParams) -> types.Hover | None:
        uri, pos = params.text_document.uri, params.position
        doc = ls.open_document(uri)
        if doc is None:
            return None
        st = await ls.analysis.current(uri)
        if st is None:
            return None
        word = doc.word_at_position(pos)
        if not word:
            return None
        hits = [t for t in st.targets if t.contains_line(pos.line) and t.name == word]
        if not hits:
            return None
        t = min(hits, key=lambda t: t.end_line - t.start_line)
        results = ls.results.cached(st.path)
        if results is None:
            results = await ls.results.for_file(st.path)
        job = ls.jobs.active_for(st.path, t.id)
        r = results.get(t.id)
        applied = applied_run(ls, st.path, t) is not None
        return types.Hover(
            contents=types.MarkupContent(
                kind=types.MarkupKind.Markdown,
                value=hover_markdown(
                    t, r, job, applied, offer_markdown(t.name, r) if r is not None else None
                ),
            )
        )
