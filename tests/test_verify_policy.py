"""The verifier's policy points, end to end on the CPU worker: library ops beside fused kernels,
precision as the user's choice, parameters matched by meaning, harmless try/except."""

from pathlib import Path

from support import CANDIDATES, EXAMPLES

from kernelevo.verify import verify_candidate

POLICY = CANDIDATES / "policy"


def _task(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return path


def _non_strict_gemm(tmp_path: Path) -> Path:
    text = (EXAMPLES / "gemm_bias_relu.py").read_text().replace("STRICT = True", "STRICT = False")
    return _task(tmp_path, "gemm_bias_relu_lib", text)


def test_fused_epilogue_beside_the_library_gemm_verified(tmp_path, evaluator):
    v = verify_candidate(
        _non_strict_gemm(tmp_path),
        POLICY / "linear_library_gemm_epilogue.py",
        evaluator=evaluator,
        device=evaluator.device,
    )
    assert v.status == "verified", v.reason
    assert v.kept_library_ops == ["aten.mm"]
    assert "keeps the cuBLAS matrix product; ReLU fused in one Triton kernel" in v.reason
    assert v.phases["spare_warms"] == ["cublas"]  # the next candidate process makes its handle


def test_strict_task_or_flag_demands_everything_custom(tmp_path, evaluator):
    cand = POLICY / "linear_library_gemm_epilogue.py"
    v = verify_candidate(
        EXAMPLES / "gemm_bias_relu.py", cand, evaluator=evaluator, device=evaluator.device
    )
    assert v.status == "rejected" and "strict" in v.reason
    flag = verify_candidate(
        _non_strict_gemm(tmp_path), cand, evaluator=evaluator, device=evaluator.device, strict=True
    )
    assert flag.status == "rejected" and "aten.mm" in flag.reason


def test_library_only_candidate_rejected(tmp_path, evaluator):
    text = (
        (EXAMPLES / "gemm_bias_relu.py")
        .read_text()
        .replace(
            "return torch.relu(F.linear(x, self.weight, self.bias))",
            "return F.linear(x, self.weight, self.bias)",
        )
    )
    text = text.replace("STRICT = True", "")
    v = verify_candidate(
        _task(tmp_path, "linear", text),
        POLICY / "matmul_library_only.py",
        evaluator=evaluator,
        device=evaluator.device,
    )
    assert v.status == "rejected" and "leaves the whole reference to library calls" in v.reason, (
        v.reason
    )


def test_kernel_whose_result_is_dropped_rejected(tmp_path, evaluator):
    v = verify_candidate(
        _non_strict_gemm(tmp_path),
        POLICY / "linear_discards_kernel.py",
        evaluator=evaluator,
        device=evaluator.device,
    )
    assert v.status == "rejected" and "does not depend on any custom kernel's result" in v.reason, (
        v.reason
    )


def test_tf32_level_candidate_incorrect_with_its_tf32_verdict(evaluator):
    cand = POLICY / "rms_norm_fp16_rounding.py"
    v = verify_candidate(
        EXAMPLES / "rms_norm.py", cand, evaluator=evaluator, device=evaluator.device
    )
    assert v.status == "incorrect", v.reason
    assert "passes at TF32 tolerance (rel. error" in v.reason and "--allow-tf32" in v.reason, (
        v.reason
    )
    ok = verify_candidate(
        EXAMPLES / "rms_norm.py",
        cand,
        evaluator=evaluator,
        device=evaluator.device,
        precision=("tf32",),
    )
    assert ok.status == "verified" and "at TF32 tolerance" in ok.reason, ok.reason


def test_task_allow_tf32_accepts_it(tmp_path, evaluator):
    text = (EXAMPLES / "rms_norm.py").read_text() + "\nALLOW_TF32 = True\n"
    v = verify_candidate(
        _task(tmp_path, "rms_tf32", text),
        POLICY / "rms_norm_fp16_rounding.py",
        evaluator=evaluator,
        device=evaluator.device,
    )
    assert v.status == "verified", v.reason


def test_renamed_parameters_mapped_and_config_guard_accepted(evaluator):
    v = verify_candidate(
        EXAMPLES / "rms_norm.py",
        POLICY / "rms_norm_renamed_weight.py",
        evaluator=evaluator,
        device=evaluator.device,
    )
    assert v.status == "verified", v.reason
    weights = next(c for c in v.checks if c.name == "weights")
    assert (
        "mapped by registration order" in weights.message and "scale <- weight" in weights.message
    )


def test_unmatched_parameters_built_from_one_seed(tmp_path, evaluator):
    src = (
        (POLICY / "rms_norm_renamed_weight.py")
        .read_text()
        .replace(
            "self.scale = nn.Parameter(torch.ones(hidden))",
            "self.scale = nn.Parameter(torch.rand(1, hidden) + 0.5)",
        )
    )
    cand = tmp_path / "seeded.py"
    cand.write_text(src)
    v = verify_candidate(
        EXAMPLES / "rms_norm.py", cand, evaluator=evaluator, device=evaluator.device
    )
    assert v.status == "verified", v.reason
    assert "KernelBench's rule" in next(c for c in v.checks if c.name == "weights").message


def test_weights_folded_at_construction_judged_from_one_seed(evaluator):
    v = verify_candidate(
        EXAMPLES / "rms_norm.py",
        POLICY / "rms_norm_folded_weight.py",
        evaluator=evaluator,
        device=evaluator.device,
    )
    assert v.status == "verified", v.reason
    assert (
        "transforms its weights at construction"
        in next(c for c in v.checks if c.name == "weights").message
    )


UNSET_WEIGHT_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """A weight made with torch.empty for the enclosing model to fill (Hugging Face's expert
    layers): standing alone its values are whatever memory held, NaN here."""

    def __init__(self, dim):
        super().__init__()
        self.w = nn.Parameter(torch.empty(dim, dim).fill_(float("nan")))

    def forward(self, x):
        return torch.relu(x @ self.w)


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return [16]
'''

RELU_AFTER = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.w = nn.Parameter(torch.empty(dim, dim))

    def forward(self, x):
        y = (x @ WEIGHT).contiguous()
        out = torch.empty_like(y)
        relu_kernel[(triton.cdiv(y.numel(), 256),)](y, out, y.numel(), BLOCK=256)
        return out
"""


def test_a_weight_never_initialized_is_drawn_at_random(tmp_path, evaluator):
    """The task was refused ('every output value of Model.forward is NaN or Inf'): the judge's
    noise on each weight, scaled by its spread, kept the NaN."""
    task = _task(tmp_path, "unset_weight", UNSET_WEIGHT_TASK)
    for weight, status in (("self.w", "verified"), ("torch.eye(16)", "incorrect")):
        cand = tmp_path / f"cand_{status}.py"
        cand.write_text(RELU_AFTER.replace("WEIGHT", weight))
        v = verify_candidate(task, cand, evaluator=evaluator, device=evaluator.device)
        assert v.status == status, v.reason
