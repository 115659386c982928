"""Linear layer with a fused epilogue: relu(x @ W^T + b).

The shape of most MLP and projection layers. cuBLAS does the GEMM well; eager PyTorch
then spends extra passes over the output for the bias and the ReLU. A Triton kernel with
the epilogue fused into the GEMM saves those passes, but must compete with cuBLAS on
the GEMM itself: this task is STRICT (a kernel-writing exercise), so keeping cuBLAS and
fusing only the epilogue, which the default library-op policy verifies, is refused here.

fp32 inputs: Triton's tl.dot (and cuBLAS with allow_tf32) multiply in TF32 on the GPU,
so the tolerance accepts TF32 rounding (relative L2 error ~7e-4 at K=4096) and still
rejects bf16 inputs (~2e-3).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
in_features = 4096
out_features = 4096

SMALL = {"batch_size": 48, "in_features": 80, "out_features": 72}

TOLERANCE = {"atol": 5e-2, "rtol": 1e-2, "rel_l2": 1.5e-3}
ALLOW_TF32 = True  # the roofline bounds this task by the tensor-core rate, not the fp32 pipes
STRICT = True  # a kernel-writing exercise: the GEMM too must be the candidate's own


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        bound = in_features ** -0.5
        self.weight = nn.Parameter((torch.rand(out_features, in_features) * 2 - 1) * bound)
        self.bias = nn.Parameter((torch.rand(out_features) * 2 - 1) * bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(F.linear(x, self.weight, self.bias))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]


def get_extra_inputs():
    # in/out features are fixed by the weight; vary the batch (not a multiple of any tile).
    return [
        [torch.randn(batch_size // 3 + 5, in_features)],
        [torch.randn(batch_size // 16 + 1, in_features) * 2.0],
    ]
