"""Compiling ahead: a candidate's kernels are compiled for the GPU in a compile worker (no GPU),
into the caches the run worker reads, and a compile error ends the verdict there."""

from pathlib import Path

import pytest
from support import CANDIDATES, EXAMPLES

from kernelevo.evaluate import Evaluator
from kernelevo.verify import verify_candidate
from kernelevo.verify.compile_ahead import precompile
from kernelevo.worker.pool import Worker

SOFTMAX = EXAMPLES / "softmax.py"
GOOD = CANDIDATES / "softmax" / "triton_ok.py"

# tl.arange needs a power-of-two range: the interpreter accepts 1000, the compiler does not.
BAD_COMPILE = GOOD.read_text().replace("tl.arange(0, BLOCK_SIZE)", "tl.arange(0, 1000)")
FORWARD = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
ITEM_FIRST = GOOD.read_text().replace(
    FORWARD, FORWARD + "        assert x.abs().sum().item() >= 0\n", 1
)


@pytest.fixture
def caches(tmp_path, monkeypatch):
    env = {
        "TRITON_CACHE_DIR": str(tmp_path / "triton"),
        "KERNELEVO_CACHE": str(tmp_path / "kernelevo"),
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def cubins(folder: str) -> list[Path]:
    return sorted(Path(folder).rglob("*.cubin"))


def test_triton_kernels_compiled_for_sm90_into_the_candidates_own_cache(caches):
    with Worker("compile") as w:
        ahead = precompile(w, SOFTMAX, GOOD, "triton", device="cpu", size="small")
        assert ahead.status == "compiled", ahead.reason
        assert ahead.kernels == ["softmax_kernel"]
        assert cubins(ahead.cache), "the cubin lands in the candidate's own cache folder"
        assert not cubins(caches["TRITON_CACHE_DIR"]), "the shared cache is not the candidate's"
        assert not str(ahead.cache).startswith(str(w.cache_root)), (
            "held outside the compile sandbox's reach until the candidate runs"
        )


def test_compile_error_is_the_verdict_and_the_gpu_worker_is_never_used(caches, tmp_path):
    assert "tl.arange(0, 1000)" in BAD_COMPILE
    cand = tmp_path / "bad.py"
    cand.write_text(BAD_COMPILE)
    with Evaluator("cpu") as ev:
        v = verify_candidate(SOFTMAX, cand, evaluator=ev, use_cache=False)
        assert ev.runner.proc is None, (
            "a candidate that does not compile must not reach the run worker"
        )
    assert v.status == "compile_error", v.reason
    assert "arange" in v.reason and "\n" not in v.reason, "one line for the reason"
    assert "tl.arange(0, 1000)" in v.log and "^" in v.log, (
        "the compiler's pointer at the line, for the model"
    )
    check = next(c for c in v.checks if c.name == "compiled_ahead")
    assert not check.passed


def test_forward_that_needs_data_is_compiled_by_the_run_worker_instead(caches, tmp_path):
    assert ".item()" in ITEM_FIRST
    cand = tmp_path / "item.py"
    cand.write_text(ITEM_FIRST)
    with Evaluator("cpu") as ev:
        v = verify_candidate(SOFTMAX, cand, evaluator=ev, use_cache=False)
    assert v.status == "verified", v.reason
    check = next(c for c in v.checks if c.name == "compiled_ahead")
    assert check.passed and check.detail["status"] == "partial" and "meta" in check.message
    assert any(c.name == "aot_compile_sm90" and c.passed for c in v.checks), (
        "the interpreter's launches still compile"
    )
    assert "precompile_s" in v.phases


def test_cuda_fast_path_cubin_cached_ahead(caches):
    with Worker("compile") as w:
        ahead = precompile(
            w, SOFTMAX, CANDIDATES / "softmax" / "cuda_fast.py", "cuda", device="cpu", size="small"
        )
    assert ahead.status == "compiled", ahead.reason
    assert list((Path(ahead.cache) / "kernelevo" / "cuda").rglob("*")), (
        "nvcc's cubin cached by content hash, in the candidate's own folder"
    )


def test_dispatcher_compiles_before_taking_a_slot(caches, tmp_path):
    from kernelevo.dispatch.local import LocalDispatcher

    cand = tmp_path / "bad.py"
    cand.write_text(BAD_COMPILE)
    with LocalDispatcher("cpu", workers=1) as d:
        v = d.evaluate(SOFTMAX, cand)
        assert all(s.handle.runner.proc is None for s in d.pool), (
            "no run worker started for a compile error"
        )
    assert v.status == "compile_error"


def test_kernel_needing_more_shared_memory_than_the_arch_has_stops_ahead(caches, tmp_path):
    """On the H200 such a candidate failed at its first launch, after taking a GPU slot."""
    gemm = CANDIDATES / "gemm_bias_relu" / "triton_ok.py"
    small_tiles = "BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages = 32, 32, 32, 4, 2"
    assert small_tiles in gemm.read_text()
    cand = (
        tmp_path / "huge_tiles.py"
    )  # 2 x 256 x 128 fp32 operands x 4 stages: ~1 MiB, the limit 227 KiB
    cand.write_text(
        gemm.read_text().replace(
            small_tiles, "BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages = 256, 256, 128, 8, 4"
        )
    )
    with Worker("compile") as w:
        ahead = precompile(
            w, EXAMPLES / "gemm_bias_relu.py", cand, "triton", device="cpu", size="small"
        )
    assert ahead.status == "compile_error", (ahead.status, ahead.reason)
    assert "shared memory" in ahead.reason and "232448" in ahead.reason, ahead.reason
    with Worker("compile") as w:
        fits = precompile(
            w, EXAMPLES / "gemm_bias_relu.py", gemm, "triton", device="cpu", size="small"
        )
    assert fits.status == "compiled", fits.reason


GUARDED = GOOD.read_text().replace(
    FORWARD, FORWARD + "        assert x.is_cuda, 'inputs must be on the GPU'\n", 1
)


def test_forward_guarded_by_is_cuda_compiles_ahead(caches, tmp_path):
    """Most published Triton candidates assert x.is_cuda first: the dry run presents inputs that
    say they are CUDA tensors, so their kernels compile ahead like any other."""
    cand = tmp_path / "guarded.py"
    cand.write_text(GUARDED)
    with Worker("compile") as w:
        ahead = precompile(w, SOFTMAX, cand, "triton", device="cpu", size="small")
    assert ahead.status == "compiled", ahead.reason
    assert ahead.kernels == ["softmax_kernel"] and cubins(ahead.cache)


def test_the_same_candidate_compiled_again_hits_its_own_cache(caches, tmp_path):
    """A candidate's folder is held under its content (candidate, task, backend, arch, size) and
    moved between sandboxes; a second compile of the same content starts from it and rewrites
    no cubin (Triton's group files name absolute paths, so they are found by name)."""
    cand = tmp_path / "again.py"
    cand.write_text(GOOD.read_text())
    with Worker("compile") as w:
        first = precompile(w, SOFTMAX, cand, "triton", device="cpu", size="small")
        stamps = {p.name: p.stat().st_mtime_ns for p in cubins(first.cache)}
        second = precompile(w, SOFTMAX, cand, "triton", device="cpu", size="small")
        again = {p.name: p.stat().st_mtime_ns for p in cubins(second.cache)}
        other = tmp_path / "other.py"
        other.write_text(
            GOOD.read_text().replace("cols = tl.arange", "# other\n    cols = tl.arange", 1)
        )
        third = precompile(w, SOFTMAX, other, "triton", device="cpu", size="small")
    assert first.status == second.status == "compiled" and stamps, first.reason
    assert again == stamps, "the second compile of the same content recompiled"
    assert third.cache != second.cache, "another candidate never gets this one's folder"


EXITS_ON_IMPORT = "import os\nos._exit(7)\n"


def test_a_compile_child_that_ends_unanswered_leaves_the_compile_to_the_gpu_worker(
    caches, tmp_path
):
    cand = tmp_path / "exits.py"
    cand.write_text(EXITS_ON_IMPORT)
    with Worker("compile") as w:
        ahead = precompile(w, SOFTMAX, cand, "triton", device="cpu", size="small")
        assert ahead.status == "partial" and "exit code 7" in ahead.reason, ahead.reason
        again = precompile(w, SOFTMAX, GOOD, "triton", device="cpu", size="small")
        assert again.status == "compiled", "the worker answers the next candidate"


def test_an_ahead_of_time_compile_whose_child_ends_is_a_compile_error(caches, tmp_path):
    from kernelevo.verdict import Verdict
    from kernelevo.verify import _aot_check

    cand = tmp_path / "exits.py"
    cand.write_text(EXITS_ON_IMPORT)
    verdict = Verdict("verified", "")
    with Worker("compile") as w:
        _aot_check(w, cand, {"softmax_kernel": []}, verdict, 60)
    assert verdict.status == "compile_error", "a child that never answered proves no compile"
    check = next(c for c in verdict.checks if c.name == "aot_compile_sm90")
    assert not check.passed and "exit code 7" in check.message, check.message


def test_a_cuda_build_error_is_summed_up_by_its_first_located_error_not_nvccs_count():
    """nvcc ends with "1 error detected in the compilation of ..."; the verdict's one line must be
    the error itself (a KernelBench leaderboard kernel calling `input.type()`, which torch's
    current headers no longer convert), and a Triton message keeps its last line."""
    from kernelevo.verify.compile_ahead import short_reason

    cuda = (
        "CudaCompileError: load_inline extension 'argmin_cuda' does not compile:\n"
        "nvcc -cubin cuda.cu failed:\n"
        'cuda_sources:39: error: no suitable conversion function from "const '
        'at::DeprecatedTypeProperties" to "c10::ScalarType" exists\n'
        "     ; torch::headeronly::ScalarType _st = ::detail::scalar_type(the_type); ;\n"
        "                                                                 ^\n"
        '1 error detected in the compilation of "cuda.cu".'
    )
    assert short_reason(cuda).startswith(
        "CudaCompileError: cuda_sources:39: error: no suitable conversion function"
    )
    triton = "CompilationError: at 12:8:\n    x = tl.load(p)\n        ^\nValueError: bad pointer"
    assert short_reason(triton) == "CompilationError: ValueError: bad pointer (at 12:8)"
