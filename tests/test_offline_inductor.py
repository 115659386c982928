"""Compiler-seeded candidates: Inductor's kernels extracted into a standalone Triton candidate.

On this CPU machine Inductor's Triton backend for CPU tensors generates the kernels and
the candidate runs under TRITON_INTERPRET=1; on a GPU the same path runs for CUDA.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import compiled_for_sm90

from kernelevo.offline.inductor import NotExtractable, capture_inductor, extract_inductor, rewrite

REPO = Path(__file__).resolve().parents[1]

FUSED_TASK = textwrap.dedent('''
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    rows = 64
    dim = 256
    SMALL = {"rows": 6, "dim": 40}


    class Model(nn.Module):
        """An elementwise chain and two row reductions: pointwise and reduction kernels."""
        def __init__(self, dim):
            super().__init__()
            self.bias = nn.Parameter(torch.randn(dim))

        def forward(self, x, y):
            return F.gelu(x * 2.0 + self.bias) + torch.softmax(y, dim=-1) * y.amax(-1, keepdim=True)


    def get_inputs():
        return [torch.randn(rows, dim), torch.randn(rows, dim)]


    def get_init_inputs():
        return [dim]


    def get_extra_inputs():
        return [[torch.randn(rows + 3, dim), torch.randn(rows + 3, dim)],
                [torch.randn(2, rows, dim), torch.randn(2, rows, dim)]]
''')

LINEAR_TASK = textwrap.dedent("""
    import torch
    import torch.nn as nn

    SMALL = {{}}
    {allowed}

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(24, 16)

        def forward(self, x):
            return torch.relu(self.proj(x))


    def get_inputs():
        return [torch.randn(8, 24)]


    def get_init_inputs():
        return []
""")

RUN_BOTH = textwrap.dedent("""
    import json, sys
    import torch
    from kernelevo.task import import_file, load_task_module
    task_path, size, device, *cand_paths = sys.argv[1:]
    task = load_task_module(task_path, size=size)
    errors = []
    for cand_path in cand_paths:
        cand = import_file(cand_path, "cand")
        torch.manual_seed(0)
        ref = task.Model(*task.get_init_inputs()).to(device)
        new = cand.ModelNew(*task.get_init_inputs()).to(device)
        new.load_state_dict(ref.state_dict())
        sets = [task.get_inputs()] + [list(s) for s in getattr(task, "get_extra_inputs", lambda: [])()]
        for inputs in sets:
            inputs = [x.to(device) for x in inputs]
            with torch.no_grad():
                errors.append(float((ref(*inputs) - new(*inputs)).abs().max()))
    print(json.dumps(errors))
""")


def _extracted(task: Path, text: str) -> tuple[Path, str]:
    """The task written and Inductor's kernels extracted from it at its full size."""
    task.write_text(text)
    result = extract_inductor(task, device="cpu", size="default")
    assert result.reason is None and result.source is not None, result.reason + result.detail
    return task, result.source


def _verified(task: Path, source: str, folder: Path) -> None:
    """The extracted candidate, written beside the task, is verified against it on the CPU."""
    from kernelevo.verify import verify_candidate

    candidate = folder / "candidate.py"
    candidate.write_text(source)
    verdict = verify_candidate(task, candidate, device="cpu", use_cache=False)
    assert verdict.status == "verified", verdict.reason


def _run_both(task: Path, candidates: list[Path], size: str, device: str) -> list[float]:
    """Max abs error of each candidate against the reference, per input set."""
    env = {**os.environ}
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", RUN_BOTH, str(task), size, device, *map(str, candidates)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_extracts_a_standalone_candidate_that_matches_the_reference(tmp_path: Path) -> None:
    task = tmp_path / "fused.py"
    task.write_text(FUSED_TASK)
    result = extract_inductor(task, device="cpu", size="small")
    assert result.reason is None, result.reason + result.detail
    source = result.source
    assert source is not None
    for inductor_only in (
        "torch._inductor",
        "triton_heuristics",
        "triton_helpers",
        "async_compile",
        "torch.compile(",
        "autotune",
        "libdevice",
    ):
        assert inductor_only not in source, inductor_only
    assert "@triton.jit" in source and "class ModelNew(nn.Module)" in source
    assert "def __init__(self, dim)" in source and "def forward(self, x, y)" in source
    assert "_state(self, 'bias', (40,), torch.float32, True)" in source
    assert "XBLOCK=" in source and "num_warps=" in source, (
        "launch configs are literals the search can vary"
    )
    assert "x.dim() == 2" in source and "x.dim() == 3" in source, "one variant per input rank"
    assert ", 40), (40, 1)" in source, "a size no input set varies is specialised (and checked)"

    from kernelevo.verify.static import check_source

    assert check_source(source).ok, check_source(source).problems
    from kernelevo.offline.tunables import apply_config, find_tunables

    tunables = find_tunables(source)
    names = {t.name.split(".")[-1].split("@")[0] for t in tunables}
    assert {"XBLOCK", "num_warps"} <= names
    # other block sizes than Inductor's: the grids follow them
    other = {
        t.name: t.choices[-1] if t.value != t.choices[-1] else t.choices[0]
        for t in tunables
        if "BLOCK" in t.name
    }
    candidate, retuned = tmp_path / "candidate.py", tmp_path / "retuned.py"
    candidate.write_text(source)
    retuned.write_text(apply_config(source, tunables, other))
    errors = _run_both(task, [candidate, retuned], "small", "cpu")
    assert len(errors) == 6 and max(errors) < 1e-4, errors

    from kernelevo.verify import verify_candidate

    verdict = verify_candidate(task, candidate, device="cpu", use_cache=False)
    assert verdict.status == "verified", verdict.reason
    assert compiled_for_sm90(verdict), "compiles for sm_90 too"


def test_library_ops_stay_torch_calls_only_where_the_task_allows_them(
    tmp_path: Path, monkeypatch
) -> None:
    task = tmp_path / "linear.py"
    task.write_text(
        LINEAR_TASK.format(allowed="STRICT = True")
    )  # a benchmark's rule: no library GEMM at all
    captured = capture_inductor(task, device="cpu", size="small")
    assert captured["ok"], captured.get("reason")
    assert captured["library_ops"] == []
    with pytest.raises(NotExtractable, match=r"addmm.*ALLOWED_LIBRARY_OPS"):
        rewrite(captured)
    import kernelevo.offline.inductor as inductor

    failed = inductor.InductorResult(None, "not extractable: ... addmm ...")
    monkeypatch.setattr(inductor, "extract_inductor", lambda *a, **k: failed)
    with pytest.raises(NotExtractable, match="addmm"):
        inductor.inductor_candidate(task, device="cpu", size="small")

    # by default the verifier's policy lets a candidate keep the library GEMM and convolution
    task.write_text(LINEAR_TASK.format(allowed=""))
    assert {"addmm", "mm", "convolution"} <= set(
        capture_inductor(task, device="cpu", size="small")["library_ops"]
    )
    source = rewrite({**captured, "library_ops": ["aten.addmm"]})
    assert "torch.addmm(" in source and "@triton.jit" in source
    assert "self.get_parameter('proj.weight')" in source
    candidate = tmp_path / "candidate.py"
    candidate.write_text(source)
    assert max(_run_both(task, [candidate], "small", "cpu")) < 1e-4


def test_a_graph_of_library_products_only_is_not_compiled(tmp_path: Path) -> None:
    """Inductor would emit only the cuBLAS call: the extraction says so instead of compiling."""
    task = REPO / "bench" / "kernelbench" / "level1" / "3_Batched_matrix_multiplication.py"
    small = tmp_path / "bmm.py"
    small.write_text(task.read_text() + '\n\nSMALL = {"batch_size": 2, "m": 8, "k": 16, "n": 4}\n')
    result = extract_inductor(small, device="cpu", size="small")
    assert result.source is None and "only the library call bmm" in result.reason, result.reason
    # with a kernel's worth of work beside the product, it is compiled and extracted
    task = tmp_path / "linear.py"
    task.write_text(LINEAR_TASK.format(allowed=""))
    assert extract_inductor(task, device="cpu", size="small").source is not None


def test_a_broken_task_gives_a_reason_not_a_file(tmp_path: Path) -> None:
    task = tmp_path / "broken.py"
    head = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return "
    tail = (
        "\ndef get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n"
    )
    for returned, why in [
        ("[x * 2, 3]", "tensors (and None) or a dict of tensors"),
        ("{'a': x * 2, 'b': 1}", "tensors (and None) or a dict of tensors"),
        ("{'a': x}", "computes nothing"),  # a dict of tensors, but nothing to compile
    ]:
        task.write_text(head + returned + tail)
        result = extract_inductor(task, device="cpu")
        assert result.source is None and why in result.reason, (returned, result.reason)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fused", "linear"])
def test_extracts_cuda_kernels_on_the_gpu(tmp_path: Path, name: str) -> None:
    """On the GPU: Inductor's CUDA Triton kernels (a Triton GEMM template for the linear
    layer, since the STRICT task allows no library GEMM) as a candidate that matches the reference."""
    task = tmp_path / f"{name}.py"
    task.write_text(FUSED_TASK if name == "fused" else LINEAR_TASK.format(allowed="STRICT = True"))
    result = extract_inductor(task, device="cuda", size="default")
    assert result.source is not None, f"{result.reason}\n{result.detail}"
    assert "extern_kernels" not in result.source and "torch.addmm" not in result.source
    candidate = tmp_path / "candidate.py"
    candidate.write_text(result.source)
    errors = _run_both(task, [candidate], "default", "cuda")
    assert max(errors) < 1e-3, errors


HANDMADE_KERNEL = textwrap.dedent("""
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.pointwise(
        size_hints={'x': 1024},
        filename=__file__,
        triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}},
        min_elem_per_thread=0
    )
    @triton.jit
    def triton_poi_fused_tanh_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:]
        xmask = xindex < xnumel
        tmp0 = tl.load(in_ptr0 + (xindex), xmask)
        tmp1 = triton_helpers.maximum(tmp0, tl.full([1], 0.0, tl.float32))
        tmp2 = libdevice.tanh(tl_math.exp(tmp1))
        tl.store(out_ptr0 + (xindex), tmp2, xmask)
""")

HANDMADE_WRAPPER = textwrap.dedent("""
    class Runner:
        def call(self, args):
            arg0_1, arg1_1 = args
            args.clear()
            s0 = arg0_1
            assert_size_stride(arg1_1, (s0, ), (1, ), 'input')
            assert_alignment(arg1_1, 16, 'input')
            with torch.cuda._DeviceGuard(0):
                torch.cuda.set_device(0)
                buf0 = empty_strided_cuda((s0, ), (1, ), torch.float32)
                stream0 = get_raw_stream(0)
                triton_poi_fused_tanh_0.run(reinterpret_tensor(arg1_1, (s0, ), (1, ), 0), buf0, s0, stream=stream0)
                del arg1_1
            return (buf0, )
""")


def _handmade(device: str, wrapper: str = HANDMADE_WRAPPER) -> dict:
    kernel = {
        "source": HANDMADE_KERNEL,
        "heuristic": "POINTWISE",
        "constants": {},
        "signature": [
            ["in_ptr0", "*fp32"],
            ["out_ptr0", "*fp32"],
            ["xnumel", "i32"],
            ["XBLOCK", "constexpr"],
        ],
        "configs": [{"kwargs": {"XBLOCK": 256}, "num_warps": 4, "num_stages": 1}],
        "inductor_meta": {"grid_type": "Grid1D"},
    }
    return {
        "ok": True,
        "device": device,
        "library_ops": [],
        "state": [],
        "init_params": [],
        "forward_params": ["x"],
        "output": "tensor",
        "variants": [
            {
                "key": [["tensor", 1, "torch.float32"]],
                "wrapper": wrapper,
                "kernels": {"triton_poi_fused_tanh_0": kernel},
                "placeholders": [{"source": "L['flat'][0].size()[0]"}, {"source": "L['flat'][0]"}],
            }
        ],
    }


def test_rewrite_replaces_inductor_runtime_idioms() -> None:
    source = rewrite(_handmade("cuda"))
    compile(source, "candidate.py", "exec")
    assert (
        "torch._inductor" not in source
        and "triton_helpers" not in source
        and "tl_math" not in source
    )
    assert "_DeviceGuard" not in source and "set_device" not in source and "stream" not in source
    assert (
        "from triton.language.extra import libdevice" in source
        and "libdevice.tanh(tl.math.exp(" in source
    )
    assert "def _ke_maximum(" in source and "_ke_maximum(tmp0" in source
    assert "torch.empty_strided((s0,), (1,), dtype=torch.float32, device=device)" in source
    assert "_reinterpret(arg1_1" in source
    assert (
        "triton_poi_fused_tanh_0[lambda meta: (triton.cdiv(s0, meta['XBLOCK']), 1, 1)](" in source
    )
    assert "XBLOCK=256, num_warps=4, num_stages=1)" in source
    assert "return _call_v0([x.size(0), x], x.device)[0]" in source
    on_cpu = rewrite(_handmade("cpu"))
    assert "libdevice" not in on_cpu and "_ke_tanh(tl.math.exp(" in on_cpu, (
        "the interpreter has no libdevice"
    )
    with pytest.raises(NotExtractable, match=r"aten\.sort"):
        rewrite(
            _handmade(
                "cpu", HANDMADE_WRAPPER.replace("del arg1_1", "buf1 = aten.sort.default(buf0)")
            )
        )


def _layout_check(source: str, numel: int, folder: Path) -> str:
    """What the candidate's input check says of a tensor of `numel` elements (no memory: meta)."""
    import importlib.util

    import torch

    path = folder / f"candidate_{len(list(folder.iterdir()))}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    namespace = vars(module)
    call = next(line.strip() for line in source.splitlines() if line.strip().startswith("_layout("))
    bind = {"arg1_1": torch.empty(numel, device="meta"), "s0": numel}
    try:
        eval(call, namespace, bind)
    except ValueError as exc:
        return str(exc)
    return "ok"


def test_only_symbolic_sizes_are_held_to_32_bit_indexing(tmp_path: Path) -> None:
    """Inductor picks 64-bit indexing for a size it knows to exceed 2**31 elements (KernelBench's
    L1_45 and L1_87 have such inputs); only a symbolic size was chosen 32-bit on a guard."""
    big = 2**32
    symbolic = rewrite(_handmade("cpu"))
    assert "overflow the kernels' 32-bit indexing" in _layout_check(symbolic, big, tmp_path)
    assert _layout_check(symbolic, 1024, tmp_path) == "ok"
    literal = rewrite(
        _handmade(
            "cpu", HANDMADE_WRAPPER.replace("(arg1_1, (s0, ), (1, )", f"(arg1_1, ({big}, ), (1, )")
        )
    )
    assert "symbolic=True" not in literal
    assert _layout_check(literal, big, tmp_path) == "ok"
    assert "shape (1024,), kernels need (4294967296,)" in _layout_check(literal, 1024, tmp_path)


HELPER_CHECK = textwrap.dedent("""
    import importlib.util, json, sys
    import torch
    spec = importlib.util.spec_from_file_location("helpers_under_test", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    x = torch.randn(4, 16) * 3
    x[1, 3] = float("nan")
    a = torch.randint(-20, 20, (4, 16), dtype=torch.int32)
    b = torch.randint(1, 7, (4, 16), dtype=torch.int32) * (torch.randint(0, 2, (4, 16), dtype=torch.int32) * 2 - 1)
    out = {k: torch.empty(4, 16) for k in ("tanh", "log1p", "expm1", "trunc", "isnan", "isinf")}
    stats = torch.empty(4, 3)
    amax = torch.empty(4, dtype=torch.int64)
    amin = torch.empty(4, dtype=torch.int64)
    fdiv = torch.empty_like(a)
    rem = torch.empty_like(a)
    y = x.nan_to_num(0.0)
    xe = x.clone(); xe[0, 0] = float("inf")
    lse = torch.empty(4)
    picked = torch.empty(4, 1)
    mod.helpers_kernel[(4,)](x, xe, y, a, b, out["tanh"], out["log1p"], out["expm1"], out["trunc"], out["isnan"],
                             out["isinf"], stats, amax, amin, fdiv, rem, lse, picked, N=16)
    xs = x.abs()
    checks = {
        "tanh": torch.allclose(out["tanh"], torch.tanh(x), atol=1e-6, equal_nan=True),
        "log1p": torch.allclose(out["log1p"], torch.log1p(xs), rtol=1e-6, atol=1e-7, equal_nan=True),
        "expm1": torch.allclose(out["expm1"], torch.expm1(x * 1e-3), rtol=1e-5, atol=1e-9, equal_nan=True),
        "trunc": torch.equal(out["trunc"].nan_to_num(7), torch.trunc(x).nan_to_num(7)),
        "isnan": torch.equal(out["isnan"], torch.isnan(x).float()),
        "isinf": torch.equal(out["isinf"], torch.isinf(xe).float()),
        "welford": torch.allclose(stats[:, 0], y.mean(1), atol=1e-5)
                   and torch.allclose(stats[:, 1], y.var(1, unbiased=False) * 16, rtol=1e-4)
                   and torch.all(stats[:, 2] == 16).item(),
        "argmax": torch.equal(amax, torch.argmax(x, 1)),
        "argmin": torch.equal(amin, torch.argmin(x, 1)),
        "div_floor": torch.equal(fdiv, torch.div(a, b, rounding_mode="floor")),
        "remainder": torch.equal(rem, torch.remainder(a, b)),
        "online_softmax": torch.allclose(lse, torch.logsumexp(y, 1), rtol=1e-5),
        "select_one": torch.equal(picked.view(torch.int32), x[:, 3:4].contiguous().view(torch.int32)),
    }
    print(json.dumps(checks))
""")

HELPER_KERNEL = textwrap.dedent("""
    @triton.jit
    def helpers_kernel(x_ptr, xe_ptr, y_ptr, a_ptr, b_ptr, tanh_ptr, log1p_ptr, expm1_ptr, trunc_ptr, isnan_ptr,
                       isinf_ptr, stats_ptr, amax_ptr, amin_ptr, fdiv_ptr, rem_ptr, lse_ptr, pick_ptr,
                       N: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, N)
        x = tl.load(x_ptr + row * N + cols)
        tl.store(tanh_ptr + row * N + cols, _ke_tanh(x))
        tl.store(log1p_ptr + row * N + cols, _ke_log1p(tl.abs(x)))
        tl.store(expm1_ptr + row * N + cols, _ke_expm1(x * 1e-3))
        tl.store(trunc_ptr + row * N + cols, _ke_trunc(x))
        tl.store(isnan_ptr + row * N + cols, _ke_isnan(x).to(tl.float32))
        tl.store(isinf_ptr + row * N + cols, _ke_isinf(tl.load(xe_ptr + row * N + cols)).to(tl.float32))
        y = tl.load(y_ptr + row * N + cols)[None, :]
        half = N // 2
        mean = tl.zeros([1, N], tl.float32)
        m2 = tl.zeros([1, N], tl.float32)
        weight = tl.zeros([1, N], tl.float32)
        mean, m2, weight = _ke_welford_reduce(y, mean, m2, weight, True)
        m, v, w = _ke_welford(mean, m2, weight, 1)
        tl.store(stats_ptr + row * 3, tl.sum(m, 0))
        tl.store(stats_ptr + row * 3 + 1, tl.sum(v, 0))
        tl.store(stats_ptr + row * 3 + 2, tl.sum(w, 0))
        idx = cols.to(tl.int64)[None, :]
        _, imax = _ke_max_with_index(x[None, :], idx, 1)
        _, imin = _ke_min_with_index(x[None, :], idx, 1)
        tl.store(amax_ptr + row, tl.sum(imax, 0))
        tl.store(amin_ptr + row, tl.sum(imin, 0))
        a = tl.load(a_ptr + row * N + cols)
        b = tl.load(b_ptr + row * N + cols)
        tl.store(fdiv_ptr + row * N + cols, _ke_div_floor_integer(a, b))
        tl.store(rem_ptr + row * N + cols, _ke_remainder_integer(a, b))
        # two blocks of a row through the running maximum and sum, as Inductor's looped softmax does
        half_cols = tl.arange(0, N // 2)[None, :]
        run_max = tl.full([1, N // 2], float("-inf"), tl.float32)
        run_sum = tl.zeros([1, N // 2], tl.float32)
        for block in tl.static_range(2):
            value = tl.load(y_ptr + row * N + block * (N // 2) + half_cols)
            run_max, run_sum = _ke_online_softmax_combine(run_max, run_sum, value, False)
        # the two halves' own (max, sum) merged, as a split reduction's peers are
        left_max, left_sum = _ke_online_softmax_reduce(run_max, run_sum, 1, False)
        both_max, both_sum = _ke_online_softmax_combine_with_sum(
            left_max, left_sum, tl.full([1], float("-inf"), tl.float32), tl.zeros([1], tl.float32), False
        )
        tl.store(lse_ptr + row + tl.arange(0, 1), both_max + tl.log(both_sum))
        chosen = _ke_select_one(x[None, :], cols[None, :] == 3, dim=-1, keep_dims=True)
        tl.store(pick_ptr + row + tl.arange(0, 1)[:, None], chosen)
""")


def test_standalone_helpers_match_torch_under_the_interpreter(tmp_path: Path) -> None:
    from kernelevo.offline.inductor_helpers import HELPERS, helper_sources

    module = (
        "import torch\nimport triton\nimport triton.language as tl\n\n\n"
        + helper_sources(set(HELPERS))
        + HELPER_KERNEL
    )
    path = tmp_path / "helpers.py"
    path.write_text(module)
    proc = subprocess.run(
        [sys.executable, "-c", HELPER_CHECK, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env={**os.environ, "TRITON_INTERPRET": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    checks = json.loads(proc.stdout.strip().splitlines()[-1])
    assert all(checks.values()), checks


def test_a_looped_scan_is_extracted_with_its_helpers_and_verifies(tmp_path: Path) -> None:
    """KernelBench's cumsum: Inductor scans a long row block by block and carries each block's
    last prefix with `triton_helpers.select_one`, which the candidate must carry itself."""
    original = (REPO / "bench/kernelbench/level1/89_cumsum.py").read_text()
    text = re.sub(r"(?m)^batch_size = .*$", "batch_size = 2", original)
    text = re.sub(r"(?m)^input_shape = .*$", "input_shape = (2048,)", text)
    task = tmp_path / "cumsum.py"
    task.write_text(text)
    result = extract_inductor(task, device="cpu")
    assert result.reason is None, result.reason
    assert result.source is not None and "_ke_select_one(" in result.source
    _verified(task, result.source, tmp_path)


@pytest.mark.slow
def test_an_attention_block_keeps_the_library_attention_beside_inductors_kernels(
    tmp_path: Path,
) -> None:
    """nanoGPT's Block, unedited: Inductor leaves F.scaled_dot_product_attention to the library
    and fuses the layer norms, GELU and residual adds. The verifier's default policy accepts a
    kept attention like a kept GEMM; the extraction refused it, so no transformer block with SDPA
    (nanoGPT, gpt-fast, dinov2, whisper) got an offline candidate."""
    import shutil

    from kernelevo.targets.extract import build_task
    from kernelevo.verify import verify_candidate

    shutil.copy(
        REPO / "tests" / "corpus" / "public" / "nanoGPT" / "model.py", tmp_path / "model.py"
    )
    task = Path(
        build_task(str(tmp_path / "model.py"), "Block", out_dir=str(tmp_path / "tasks")).path
    )
    result = extract_inductor(task, device="cpu", size="small")
    assert result.reason is None and result.source is not None, result.reason
    assert "_scaled_dot_product_flash_attention_for_cpu" in result.source
    assert "@triton.jit" in result.source
    candidate = tmp_path / "candidate.py"
    candidate.write_text(result.source)
    verdict = verify_candidate(task, candidate, device="cpu", use_cache=False)
    assert verdict.status == "verified", verdict.reason
    assert any("attention" in op for op in verdict.kept_library_ops), verdict.kept_library_ops


def test_the_extraction_keeps_only_library_ops_the_verifier_keeps() -> None:
    """Two lists of one policy: an op the extraction keeps by default but the verifier does not
    gets every such candidate rejected ("calls the reference op itself"), as the CPU attention
    kernel was until both listed it."""
    from kernelevo.checks.library_ops import LIBRARY_FAMILIES, OP_FAMILIES
    from kernelevo.offline.inductor_capture import DEFAULT_LIBRARY_OPS

    kept = {op for family in LIBRARY_FAMILIES for op in OP_FAMILIES[family]}
    assert {f"aten.{op}" for op in DEFAULT_LIBRARY_OPS} <= kept


PAIR_TASK = '''
import torch
from torch import nn


class Model(nn.Module):
    """A rotary step as Hugging Face layers take it: (cos, sin) as one argument."""

    def forward(self, x, pe):
        cos, sin = pe
        return torch.relu(x * cos + torch.flip(x, dims=[-1]) * sin)


def get_inputs():
    return [torch.randn(4, 16, 32), (torch.randn(1, 16, 32), torch.randn(1, 16, 32))]


def get_init_inputs():
    return []
'''


def test_an_argument_that_is_a_pair_of_tensors_is_extracted(tmp_path: Path) -> None:
    """Inductor names the pair's tensors L['flat'][i][0]: the extraction had refused them ('not a
    tensor, size, stride or offset') and keyed its variant on the pair's printed values."""
    task, source = _extracted(tmp_path / "pair.py", PAIR_TASK)
    assert "len(pe) == 2 and pe[0].dim() == 3 and pe[0].dtype == torch.float32" in source
    dispatch = [line for line in source.splitlines() if line.strip().startswith("if ")]
    assert not any("tensor(" in line for line in dispatch)  # no printed values in the dispatch
    _verified(task, source, tmp_path)


ROTARY_TASK = textwrap.dedent('''
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        """A rotary embedding as Hugging Face writes it: inv_freq is a buffer the state_dict
        leaves out (persistent=False), and the outputs come back as a dict."""
        def __init__(self, dim):
            super().__init__()
            inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
            self.register_buffer("inv_freq", inv_freq, persistent=False)

        def forward(self, x, position_ids):
            freqs = position_ids[..., None].float() * self.inv_freq
            emb = torch.cat((freqs, freqs), dim=-1)
            return {"cos": emb.cos() * x.mean(), "sin": emb.sin()}


    def get_inputs():
        return [torch.randn(2, 16, 32), torch.arange(16).expand(2, 16).contiguous()]


    def get_init_inputs():
        return [32]
''')


def test_a_buffer_kept_out_of_the_state_dict_is_written_into_the_candidate(tmp_path: Path) -> None:
    """The extraction refused such a buffer ('a candidate cannot receive its value') and a
    reference returning a dict ('only a tensor or a tuple/list'): Llama's rotary embedding and
    whole model got no offline candidate."""
    task, source = _extracted(tmp_path / "rotary.py", ROTARY_TASK)
    assert "_state(self, 'inv_freq', (16,), torch.float32, False, values=[1.0, " in source
    assert "dict(zip(['cos', 'sin']," in source
    _verified(task, source, tmp_path)


ATTENTION_LIKE_TASK = textwrap.dedent('''
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        """Returns (output, weights, None) as Hugging Face's T5Attention does without a cache."""

        def forward(self, x):
            weights = torch.softmax(x @ x.transpose(-1, -2), dim=-1)
            return torch.relu(weights @ x), weights, None


    def get_inputs():
        return [torch.randn(2, 16, 32)]


    def get_init_inputs():
        return []
''')


def test_a_tuple_with_none_in_it_is_returned_as_the_reference_does(tmp_path: Path) -> None:
    """The extraction refused it ('only a tensor or a tuple/list of tensors'): T5's attention got no
    offline candidate."""
    task, source = _extracted(tmp_path / "attention_like.py", ATTENTION_LIKE_TASK)
    assert "(lambda r: (r[0], r[1], None))(" in source
    _verified(task, source, tmp_path)


def test_a_large_buffer_kept_out_of_the_state_dict_is_refused_with_its_size() -> None:
    import torch

    from kernelevo.offline.skeleton import SignatureError, state_entries

    model = torch.nn.Module()
    model.register_buffer("table", torch.zeros(64, 128), persistent=False)
    with pytest.raises(SignatureError, match=r"table .* holds 8192 values, too many"):
        state_entries(model)
