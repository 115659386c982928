"""Information diagnostics that help decide whether to optimize: off unless
`kernelevo.diagnostics` is true, and always Information severity (never a warning).

- "At least N separate kernels launched here; a fused kernel is likely faster" for a target
  whose ops each launch their own kernel in eager PyTorch.
- "A verified kernel N.NNx faster is available" when a result exists.
"""
from __future__ import annotations

import asyncio
import logging

from lsprotocol import types

from server.analysis import DocState, TargetInfo
from server.app import KernelEvoServer
from server.present import is_improvement, result_title

logger = logging.getLogger(__name__)

SOURCE = "kernelevo"
MIN_KERNELS = 3
# Ops that only change a tensor's view or read metadata launch no kernel.
_NO_KERNEL = {"view", "reshape", "permute", "transpose", "unsqueeze", "squeeze", "expand", "flatten",
              "size", "dim", "shape", "t", "narrow", "select", "split", "chunk", "view_as", "expand_as",
              "unflatten", "movedim", "detach", "numel", "stride", "is_contiguous", "unbind"}


def kernel_count(t: TargetInfo) -> int:
    return sum(1 for op in t.ops if op.rsplit(".", 1)[-1] not in _NO_KERNEL)


def diagnostics_for(st: DocState, results: dict, lines: list[str]) -> list[types.Diagnostic]:
    """On the target's first line (its `def`/`class` or decorator), whole line."""
    out: list[types.Diagnostic] = []
    for t in st.targets:
        if t.kind not in ("module", "function"):
            continue
        text = lines[t.start_line] if t.start_line < len(lines) else ""
        indent = len(text) - len(text.lstrip())
        rng = types.Range(start=types.Position(line=t.start_line, character=indent),
                          end=types.Position(line=t.start_line, character=len(text.rstrip("\r\n").encode("utf-16-le")) // 2))
        r = results.get(t.id)
        if is_improvement(r):
            out.append(types.Diagnostic(range=rng, severity=types.DiagnosticSeverity.Information, source=SOURCE,
                                        code="kernel-available",
                                        message=f"A verified kernel is available for {t.name}: {result_title(r)}"))
            continue
        n = kernel_count(t)
        if n >= MIN_KERNELS:
            out.append(types.Diagnostic(
                range=rng, severity=types.DiagnosticSeverity.Information, source=SOURCE, code="unfused-ops",
                message=f"At least {n} separate kernels launched here ({', '.join(o.rsplit('.', 1)[-1] for o in t.ops[:6])}"
                        f"{', …' if len(t.ops) > 6 else ''}); a fused kernel is likely faster"))
    return out


def _spawn(coro) -> None:
    task = asyncio.ensure_future(coro)
    task.add_done_callback(lambda t: t.cancelled() or t.exception() is None
                           or logger.error("publishing diagnostics failed", exc_info=t.exception()))


def register(server: KernelEvoServer) -> None:
    published: set[str] = set()

    async def publish(st: DocState) -> None:
        ls = server
        if not ls.settings.diagnostics:
            if st.uri in published:
                published.discard(st.uri)
                ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=st.uri, diagnostics=[]))
            return
        results = await ls.results.for_file(st.path)
        doc = ls.open_document(st.uri)
        lines = list(doc.lines) if doc is not None else []
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=st.uri, diagnostics=diagnostics_for(st, results, lines), version=doc.version if doc else None))
        published.add(st.uri)

    def publish_all() -> None:
        try:
            docs = list(server.workspace.text_documents)
        except RuntimeError:
            return
        for uri in docs:
            st = server.analysis.state(uri)
            if st is not None and st.ready.is_set():
                _spawn(publish(st))

    def on_analysis(st: DocState) -> None:
        if server.open_document(st.uri) is not None:
            _spawn(publish(st))

    server.analysis_listeners.append(on_analysis)
    server.store_listeners.append(publish_all)
    server.settings_listeners.append(publish_all)
