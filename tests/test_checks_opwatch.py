import torch

from kernelevo.checks.opwatch import OpRecorder, library_op_check


def test_recorder_sees_ops_and_separates_neutral():
    x = torch.randn(4, 4)
    with OpRecorder() as rec:
        y = torch.empty_like(x)
        y.copy_(x)
        torch.softmax(x, -1)
    assert "aten._softmax" in rec.ops and rec.compute_ops() == {"aten._softmax"}


def test_reference_ops_banned_by_family_unless_allowed():
    ref = {"aten.addmm", "aten.relu"}
    strict = library_op_check(ref, {"aten.mm": 1, "aten.empty": 2}, [], strict=True)
    assert (
        not strict.passed and strict.detail["banned"] == ["aten.mm"] and "strict" in strict.message
    )
    assert library_op_check(ref, {"aten.mm": 1}, ["aten.addmm"], strict=True).passed
    ok = library_op_check(ref, {"aten.empty": 1}, [])
    assert ok.passed and ok.detail["used"] == []
    relu = library_op_check(ref, {"aten.mm": 1, "aten.relu": 1}, [])
    assert not relu.passed and relu.detail["banned"] == ["aten.relu"]


def test_fused_epilogue_beside_a_library_gemm_is_accepted_and_described():
    from kernelevo.checks.opwatch import describe_split

    ref = {"aten.convolution", "aten.add", "aten.relu", "aten.mul"}
    c = library_op_check(ref, {"aten.convolution": 1, "aten.empty_like": 1}, [])
    assert c.passed and c.detail["kept"] == ["aten.convolution"]
    assert c.detail["replaced"] == ["aten.add", "aten.mul", "aten.relu"]
    assert (
        describe_split(c.detail["kept"], c.detail["replaced"], 1, "triton")
        == "keeps the cuDNN convolution; bias, scaling and ReLU fused in one Triton kernel"
    )


def test_library_only_candidate_is_rejected():
    c = library_op_check({"aten.mm"}, {"aten.addmm": 1}, [])
    assert not c.passed and "leaves the whole reference to library calls" in c.message
    conv = library_op_check(
        {"aten.convolution", "aten.relu"}, {"aten.convolution": 1, "aten.clamp_min": 1}, []
    )
    assert conv.passed  # the op check alone passes; the data-flow check below catches the rest


def test_data_flow_marks_what_a_custom_call_produced():
    import torch

    from kernelevo.checks.opwatch import DataFlow, _storages, note_custom_call

    x = torch.randn(8)
    flow = DataFlow(_storages(x))
    with OpRecorder(flow):
        scratch = torch.empty_like(x)
        dropped = torch.relu(x)
        note_custom_call(
            (x, dropped, scratch), outputs=scratch
        )  # a C++ "kernel" reading x and dropped
        y = scratch.view(2, 4) * 2  # follows the kernel's result
        z = torch.clamp_min(x, 0)  # computed by PyTorch alone
    assert flow.calls == 1 and flow.reaches(y) and not flow.reaches(z) and not flow.reaches(x)
    assert not flow.reaches(dropped)


def test_triton_kernels_write_what_they_store_through():
    import triton
    import triton.language as tl

    from kernelevo.checks.opwatch import stored_params

    @triton.jit
    def k(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        ptrs = out_ptr + offs
        tl.store(ptrs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs), mask=offs < n)
        tl.atomic_add(y_ptr, 1.0)

    written = stored_params(k)
    assert {"out_ptr", "y_ptr"} <= written and "x_ptr" not in written


def test_own_kernels_are_custom_whatever_their_name():
    """The offline GEMM template's Triton kernel is called gemm_epilogue_kernel: that name must
    not make it a library GEMM (it did, and every template GEMM was rejected on the H200)."""
    from kernelevo.checks.opwatch import kernel_check

    gemm_ref = {"aten.addmm"}
    ours = kernel_check(
        ["gemm_epilogue_kernel", "void at::native::vectorized_elementwise_kernel<4>(...)"],
        gemm_ref,
        [],
        own={"gemm_epilogue_kernel"},
    )
    assert ours.passed and ours.detail["custom_kernels"] == ["gemm_epilogue_kernel"]
    cublas = kernel_check(
        ["sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32", "relu_kernel"],
        gemm_ref,
        [],
        own={"relu_kernel"},
        strict=True,
    )
    assert not cublas.passed and "library GEMM" in cublas.message
    assert kernel_check(
        ["sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32", "relu_kernel"],
        gemm_ref,
        [],
        own={"relu_kernel"},
    ).passed  # the default policy keeps cuBLAS beside a fused epilogue


def test_own_kernel_names_from_cuda_sources_match_profiler_names():
    from kernelevo.checks.opwatch import _is_own, own_kernel_names

    src = (
        'K = r"""\n__global__ void __launch_bounds__(256) my_gemm(const float* a) {}\n"""\nextern "C" '
        "__global__ void tile(int n) {}"
    )
    own = own_kernel_names(src)
    assert own == {"my_gemm", "tile"}
    assert _is_own("my_gemm(float const*)", own) and _is_own("void my_gemm<128>(float const*)", own)
    assert _is_own("_Z7my_gemmPKf", own) and _is_own("tile", own)
    assert not _is_own("cutlass_80_tensorop_s1688gemm_128x128", own)


def test_a_kernel_named_like_cublas_does_not_whitelist_cublas():
    from kernelevo.checks.opwatch import kernel_check

    name = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32"
    check = kernel_check(
        [name, "relu_kernel"], {"aten.addmm"}, [], own={name, "relu_kernel"}, strict=True
    )
    assert not check.passed and "library GEMM" in check.message


def test_profiling_kernels_imports_neither_inductor_nor_dynamo():
    """torch.profiler.profile's start asks `hasattr(torch, "_inductor")`, which imports Inductor and
    Dynamo (3.5 s in a fresh candidate process, on every GEMM/conv verdict); kernelevo profiles
    through torch.autograd.profiler, which does not."""
    from support import fresh_python

    code = (
        "import sys, torch\n"
        "from kernelevo.checks.opwatch import profile_kernels\n"
        "names = profile_kernels(lambda: torch.ones(3) + 1)\n"
        "print(isinstance(names, list), 'torch._inductor' in sys.modules, 'torch._dynamo' in sys.modules)\n"
    )
    out = fresh_python(code, env={"CUDA_VISIBLE_DEVICES": ""})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-3:] == ["True", "False", "False"], out.stdout


def test_the_libraries_a_candidates_ops_called_are_named_for_the_next_spare():
    from kernelevo.checks.library_ops import libraries_called

    assert libraries_called(["aten.addmm", "aten.relu", "aten.convolution", "aten.bmm"]) == [
        "cublas",
        "cudnn",
    ]
    assert libraries_called(["aten.relu", "aten._scaled_dot_product_flash_attention"]) == []
