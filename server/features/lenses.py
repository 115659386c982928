"""Code lenses on each target: "Optimize with KernelEvo", and for a verified result
"2.31x faster Triton kernel (H200) — Show diff" and "Apply" (a CPU-verified kernel says so
instead of a speed); "optimizing…" while a job runs ("cancelling…" once asked to stop, until
it has); "applied" once its kernel is in the code.

Answered from the cached analysis (shifted for edits since) and the cached results,
so a lens request never waits for parsing.
"""

from __future__ import annotations

from kernelevo_server.app import KernelEvoServer
from kernelevo_server.applied import applied_run
from kernelevo_server.features.precision import offer_title
from kernelevo_server.present import offers_kernel, progress_message, result_title
from lsprotocol import types


def _lens(line: int, title: str, command: str, args: list) -> types.CodeLens:
    pos = types.Position(line=line, character=0)
    return types.CodeLens(
        range=types.Range(start=pos, end=pos),
        command=types.Command(title=title, command=command, arguments=args),
    )


def register(server: KernelEvoServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(ls: KernelEvoServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        uri = params.text_document.uri
        st = await ls.analysis.current(uri)
        if st is None:
            return []
        results = ls.results.cached(st.path)
        if results is None:
            results = await ls.results.for_file(st.path)
        lenses: list[types.CodeLens] = []
        for t in st.targets:
            job = ls.jobs.active_for(st.path, t.id)
            if job is not None:
                lenses.append(
                    _lens(
                        t.start_line,
                        "KernelEvo: cancelling…"
                        if job.cancelling
                        else f"KernelEvo: optimizing… {progress_message(job)} — Cancel",
                        "kernelevo.cancel",
                        [job.id],
                    )
                )
            else:
                lenses.append(
                    _lens(
                        t.start_line,
                        "Optimize with KernelEvo",
                        "kernelevo.optimize",
                        [uri, t.id, ls.settings.backend],
                    )
                )
            r = results.get(t.id)
            accept = offer_title(r)
            if accept is not None and job is None:
                assert r is not None
                lenses.append(
                    _lens(
                        t.start_line,
                        accept,
                        "kernelevo.acceptPrecision",
                        [uri, t.id, r.precision_offer["level"]],
                    )
                )
            applied = applied_run(ls, st.path, t)
            if applied is not None:
                lenses.append(
                    _lens(
                        t.start_line,
                        f"KernelEvo kernel applied (run {applied}) — undo restores the original",
                        "",
                        [uri, t.id, applied],
                    )
                )
            elif offers_kernel(r):
                assert r is not None
                lenses.append(
                    _lens(
                        t.start_line,
                        f"{result_title(r)} — Show diff",
                        "kernelevo.showDiff",
                        [uri, t.id, r.run_id],
                    )
                )
                lenses.append(
                    _lens(t.start_line, "Apply", "kernelevo.apply", [uri, t.id, r.run_id])
                )
        return lenses
