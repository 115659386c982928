"""Ahead-of-time compile, for a GPU target, of the Triton kernels a candidate launched (in a compile worker)."""

from __future__ import annotations

from kernelevo.worker.compile_replies import AotCompiled
from kernelevo.worker.compile_requests import Aot


def aot_compile(req: Aot) -> AotCompiled:
    """Import the candidate and compile what launched for sm_<arch>.

    Runs in a compile worker that never used Triton's interpreter: the interpreter
    patches triton.language in ways that break the real code generator.
    """
    from kernelevo.backends.triton_aot import compile_launched
    from kernelevo.task import import_file

    try:
        module = import_file(req.candidate_path, "aot")
        records = compile_launched(module, req.launches, arch=int(req.arch or 90))
    except SyntaxError as exc:
        records = [{"kernel": "<module>", "ok": False, "error": f"line {exc.lineno}: {exc.msg}"}]
    except Exception as exc:  # importing for the GPU target can fail in ways the interpreter hid
        records = [
            {"kernel": "<module>", "ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}
        ]
    return AotCompiled(records=records)
