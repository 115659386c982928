import torch

from kernelevo.verify.opwatch import library_op_check
from kernelevo.verify.opwatch import OpRecorder


def test_recorder_sees_ops_and_separates_neutral():
    x = torch.randn(4, 4)
    with OpRecorder() as rec:
        y = torch.empty_like(x)
        y.copy_(x)
        torch.softmax(x, -1)
    assert "aten._softmax" in rec.ops and rec.compute_ops() == {"aten._softmax"}


def test_reference_ops_banned_by_family_unless_allowed():
    ref = {"aten.addmm", "aten.relu"}
    c = library_op_check(ref, {"aten.mm": 1, "aten.empty": 2}, [])
    assert not c.passed and c.detail["banned"] == ["aten.mm"]
    assert library_op_check(ref, {"aten.mm": 1}, ["aten.addmm"]).passed
    ok = library_op_check(ref, {"aten.empty": 1}, [])
    assert ok.passed and ok.detail["used"] == []


def test_own_kernels_are_custom_whatever_their_name():
    """The offline GEMM template's Triton kernel is called gemm_epilogue_kernel: that name must
    not make it a library GEMM (it did, and every template GEMM was rejected on the H200)."""
    from kernelevo.verify.opwatch import kernel_check

    gemm_ref = {"aten.addmm"}
    ours = kernel_check(["gemm_epilogue_kernel", "void at::native::vectorized_elementwise_kernel<4>(...)"],
                        gemm_ref, [], own={"gemm_epilogue_kernel"})
    assert ours.passed and ours.detail["custom_kernels"] == ["gemm_epilogue_kernel"]
    cublas = kernel_check(["sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32", "relu_kernel"], gemm_ref, [],
                          own={"relu_kernel"})
    assert not cublas.passed and "library GEMM" in cublas.message


def test_own_kernel_names_from_cuda_sources_match_profiler_names():
    from kernelevo.verify.opwatch import _is_own, own_kernel_names

    src = 'K = r"""\n__global__ void __launch_bounds__(256) my_gemm(const float* a) {}\n"""\nextern "C" __global__ void tile(int n) {}'
    own = own_kernel_names(src)
    assert own == {"my_gemm", "tile"}
    assert _is_own("my_gemm(float const*)", own) and _is_own("void my_gemm<128>(float const*)", own)
    assert _is_own("_Z7my_gemmPKf", own) and _is_own("tile", own)
    assert not _is_own("cutlass_80_tensorop_s1688gemm_128x128", own)


def test_a_kernel_named_like_cublas_does_not_whitelist_cublas():
    from kernelevo.verify.opwatch import kernel_check

    name = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32"
    check = kernel_check([name, "relu_kernel"], {"aten.addmm"}, [], own={name, "relu_kernel"})
    assert not check.passed and "library GEMM" in check.message
