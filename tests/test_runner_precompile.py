"""Compiling ahead in the compile worker's process: the launches of all input sets (each set's
shapes a specialization of its own) compile side by side, and the results are the same."""

import threading

import pytest
from support import CANDIDATES, EXAMPLES

from kernelevo.runner.precompile import precompile
from kernelevo.worker.compile_requests import Precompile

pytest.importorskip("triton.runtime._async_compile", reason="a Triton without async compile mode")

BAD_COMPILE = (
    (CANDIDATES / "softmax" / "triton_ok.py")
    .read_text()
    .replace("tl.arange(0, BLOCK_SIZE)", "tl.arange(0, 1000)")
)


@pytest.fixture
def compile_threads(tmp_path, monkeypatch):
    import triton.compiler as triton_compiler

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    threads: list[int] = []
    real = triton_compiler.compile

    def compile(*args, **kwargs):
        threads.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(triton_compiler, "compile", compile)  # what a kernel's first run imports
    return threads


def test_each_input_sets_specialization_compiles_off_the_calling_thread(compile_threads):
    got = precompile(
        Precompile(
            task_path=str(EXAMPLES / "softmax.py"),
            candidate_path=str(CANDIDATES / "softmax" / "triton_ok.py"),
        )
    )
    assert got.status == "compiled" and got.kernels == ["softmax_kernel"], got
    assert len(compile_threads) >= 2  # the bundled task's input sets differ in shape
    assert threading.get_ident() not in compile_threads


def test_a_compile_error_in_a_side_by_side_compile_is_the_verdict(compile_threads, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(BAD_COMPILE)
    got = precompile(Precompile(task_path=str(EXAMPLES / "softmax.py"), candidate_path=str(bad)))
    assert got.status == "compile_error" and "arange" in got.reason, got
