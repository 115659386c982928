"""The judge builds Triton's C launchers from argument types a compile child reported
(kernelevo/judge/launchers.py): only Triton's own type names reach Triton's source generator,
so a candidate cannot put text of its own into a launcher every later candidate would load."""

import pytest

from kernelevo.judge import launchers
from kernelevo.judge import replies as rp
from kernelevo.judge import requests as rq


def _handle(message):
    from kernelevo.judge.process import Judge

    return Judge().handle(message)


def _answer(*specs):
    return rp.LaunchersBuilt.parse(_handle(rq.Launchers(specs=list(specs)).wire()))


@pytest.mark.parametrize(
    "bad",
    [
        'i32 arg0); system("id"); //',
        "*fp32\n#include <stdio.h>",
        "fp32 x",
        "tensordesc<fp16[64, 64]>; exit(1)",
        7,
        None,
        [["*fp32", ["i32", ["i32", ["i32", ["i32"]]]]]],  # nested past any real tuple argument
    ],
)
def test_a_signature_that_is_not_tritons_types_is_refused_before_any_source_is_made(bad):
    answer = _answer({"signature": ["*fp32", bad, "constexpr"], "tma": []})
    assert (answer.built, answer.found) == (0, 0)
    assert len(answer.refused) == 1
    assert (
        "not a Triton argument type" in answer.refused[0]
        or "Triton's CUDA driver" in answer.refused[0]
    )


@pytest.mark.parametrize(
    "ty",
    [
        "*fp32",
        "*kfp16",
        "i32",
        "i64",
        "u8",
        "fp32",
        "bf16",
        "constexpr",
        "nvTmaDesc",
        "tensordesc<fp16[64, 64]>",
        ["*fp32", "i32"],
    ],
)
def test_tritons_own_type_names_pass_the_check(ty):
    assert launchers._types(ty) == (tuple(ty) if isinstance(ty, list) else ty)


def test_no_more_specs_than_a_candidate_needs_are_taken():
    bad = {"signature": ["not a type!"]}
    answer = _answer(*[bad] * (launchers.MAX_SPECS + 10))
    assert len(answer.refused) == launchers.MAX_SPECS


def test_a_malformed_request_is_answered_not_raised():
    assert _handle({"op": "launchers", "specs": "no list", "nonce": "n"})["refused"] == [
        "TypeError: a launcher spec is a map of signature and tma"
    ]
    assert "unknown field" in _handle({"op": "launchers", "bogus": 1})["error"]


def test_the_source_from_reported_types_is_the_one_triton_builds_from_the_kernel(tmp_path):
    """Where this Triton builds a launcher per signature: the compile child's report, turned into
    source by the judge, is byte for byte what the candidate's first launch would build (so the
    shared cache's key is the one Triton looks up)."""
    nvidia = pytest.importorskip("triton.backends.nvidia.driver")
    if not hasattr(nvidia, "make_launcher"):
        pytest.skip(
            "this Triton launches through one generic launcher: nothing is built per signature"
        )
    import torch
    import triton
    import triton.language as tl

    from kernelevo.runner import candidate_cache
    from kernelevo.runner import precompile as pc

    candidate_cache.use(str(tmp_path))

    @triton.jit
    def scale(x_ptr, y_ptr, n, s: tl.float32, t, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs) * s + t, mask=offs < n)

    compiled, specs = [], []
    with pc.triton_compile_only(90, compiled, specs):
        x = pc.as_cuda_looking(
            torch.empty(1024, device="meta", dtype=torch.float16), pc._cuda_looking()
        )
        kernel = scale[(1,)](x, x, 1000, 2.0, 7, BLOCK=1024)
    kernel = pc._resolved(kernel)
    theirs = nvidia.make_launcher({}, dict(kernel.src.signature), kernel.metadata.tensordesc_meta)
    assert specs == [
        {"signature": ["*fp16", "*fp16", "i32", "fp32", "i32", "constexpr"], "tma": []}
    ]
    assert launchers._launcher_source(specs[0]) == theirs
    assert not [p for p in tmp_path.rglob("*") if "launcher" in p.name]  # the child built none
