# level 2 index 11 agent name: KernelAgent O3 Mini High speedup: 1.21x

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice  # use libdevice for tanh

########################################################################
# Fused kernel: pooling (2×2 max), tanh activation, and group normalization.
#
# For an input tensor X with shape [N, C, H, W] (with H and W even),
# we want to compute, for each output element corresponding to a 2×2 window:
#   y = tanh(max( X[n, c, h*2:h*2+2, w*2:w*2+2] ))
#
# Then, for each sample n and each group (channels grouped into num_groups),
# we compute the group statistics (mean and variance) over the entire
# group of (C_per_group × H_out × W_out) elements and normalize:
#
#   y_norm = ((y - mean) / sqrt(var + eps)) * gamma[c] + beta[c]
#
# In this revised version we apply a few algebraic simplifications:
# 1. Instead of computing 1.0/tl.sqrt(var + eps) we use tl.rsqrt(var + eps).
# 2. We precompute the reciprocal of group_size to save two divisions.
# 3. We combine the per‐element multiplications as 
#         (activated - mean) * (rstd * gamma) + beta
#    which is mathematically equivalent to the two‐step version.
#
# We assume here that all dimensions are powers of 2 so that no masking is needed,
# and that all inputs are stored contiguously.
########################################################################

@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 256}, num_warps=4),
        triton.Config({"BLOCK": 512}, num_warps=4),
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 256}, num_warps=8),
        triton.Config({"BLOCK": 512}, num_warps=8),
        triton.Config({"BLOCK": 1024}, num_warps=8),
    ],
    key=["BLOCK"],
)
@triton.jit
def fused_pool_tanh_groupnorm_kernel(
    input_ptr,           # input tensor pointer, shape: [N, C, H, W]
    gamma_ptr,           # pointer to group norm weight gamma, shape: [C]
    beta_ptr,            # pointer to group norm bias beta, shape: [C]
    output_ptr,          # pointer to output tensor, shape: [N, C, H_out, W_out]
    N: tl.constexpr,     # batch size
    C: tl.constexpr,     # total channels
    H: tl.constexpr,     # input height (even)
    W: tl.constexpr,     # input width (even)
    num_groups: tl.constexpr,  # number of groups in GroupNorm
    eps: tl.constexpr,         # epsilon for numerical stability in GroupNorm
    BLOCK: tl.constexpr        # block size for inner loops
):
    # Spatial dimensions after 2x2 pooling.
    H_out = H // 2
    W_out = W // 2
    # Each group covers these many output elements:
    channels_per_group = C // num_groups
    group_size = channels_per_group * H_out * W_out

    # Each kernel instance handles one (n, group) pair.
    pid = tl.program_id(0)
    n = pid // num_groups             # batch index
    group_idx = pid % num_groups        # group index
    ch_base = group_idx * channels_per_group  # starting channel for this group

    # Precompute reciprocal of group_size (fusing two divisions into one multiplication).
    inv_group_size = 1.0 / group_size

    # First pass: accumulate sum and squared sum over the group in float32.
    total_sum = tl.zeros([1], dtype=tl.float32)
    total_sum_sq = tl.zeros([1], dtype=tl.float32)
    for i in range(0, group_size, BLOCK):
        offsets = i + tl.arange(0, BLOCK)
        # Map flat offsets into (channel within group, output h, output w)
        c_local = offsets // (H_out * W_out)
        rem = offsets % (H_out * W_out)
        h_out_idxs = rem // W_out
        w_out_idxs = rem % W_out
        # Global channel indices.
        ch_idxs = ch_base + c_local
        # Compute base index for 2×2 pooling.
        base_idx = (n * C + ch_idxs) * (H * W) + h_out_idxs * (2 * W) + w_out_idxs * 2

        # Load the four elements of the 2×2 window.
        a0 = tl.load(input_ptr + base_idx)
        a1 = tl.load(input_ptr + base_idx + 1)
        a2 = tl.load(input_ptr + base_idx + W)
        a3 = tl.load(input_ptr + base_idx + W + 1)
        # 2×2 max pooling.
        m_val = tl.maximum(tl.maximum(a0, a1), tl.maximum(a2, a3))
        # Tanh activation.
        activated = libdevice.tanh(m_val)
        total_sum += tl.sum(activated, axis=0)
        total_sum_sq += tl.sum(activated * activated, axis=0)

    # Compute mean and variance; use rsqrt to compute reciprocal square root.
    mean = total_sum * inv_group_size
    var = total_sum_sq * inv_group_size - mean * mean
    rstd = tl.rsqrt(var + eps)

    # Second pass: recompute pooling+tanh and write normalized output.
    for i in range(0, group_size, BLOCK):
        offsets = i + tl.arange(0, BLOCK)
        c_local = offsets // (H_out * W_out)
        rem = offsets % (H_out * W_out)
        h_out_idxs = rem // W_out
        w_out_idxs = rem % W_out
        ch_idxs = ch_base + c_local
        base_idx = (n * C + ch_idxs) * (H * W) + h_out_idxs * (2 * W) + w_out_idxs * 2

        a0 = tl.load(input_ptr + base_idx)
        a1 = tl.load(input_ptr + base_idx + 1)
        a2 = tl.load(input_ptr + base_idx + W)
        a3 = tl.load(input_ptr + base_idx + W + 1)
        m_val = tl.maximum(tl.maximum(a0, a1), tl.maximum(a2, a3))
        activated = libdevice.tanh(m_val)
        # Combine normalizing multiplications: (activated - mean) * (rstd * gamma) + beta.
        gamma_val = tl.load(gamma_ptr + ch_idxs)
        beta_val = tl.load(beta_ptr + ch_idxs)
        normalized = (activated - mean) * (rstd * gamma_val) + beta_val

        # Compute output index in [N, C, H_out, W_out] layout.
        out_idx = (n * C + ch_idxs) * (H_out * W_out) + h_out_idxs * W_out + w_out_idxs
        tl.store(output_ptr + out_idx, normalized)

########################################################################
# Python wrapper for the fused pooling + tanh + group normalization operator.
########################################################################
def fused_pool_tanh_groupnorm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, num_groups: int, eps: float) -> torch.Tensor:
    if not x.is_contiguous():
        x = x.contiguous()
    N, C, H, W = x.shape
    assert H % 2 == 0 and W % 2 == 0, "Input height and width must be even."
    H_out, W_out = H // 2, W // 2
    output = torch.empty((N, C, H_out, W_out), device=x.device, dtype=x.dtype)
    grid = lambda meta: (N * num_groups,)
    fused_pool_tanh_groupnorm_kernel[grid](x, gamma, beta, output, N, C, H, W, num_groups, eps)
    return output

########################################################################
# Optimized ModelNew: performs
#   1. ConvTranspose2d (learned deconvolution)
#   2. BatchNorm2d (batch normalization)
#   3. Fused Pooling (2×2 max), tanh activation, and GroupNorm (group normalization)
#
# This module exposes the same interface as the original version.
########################################################################
class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, groups, num_groups):
        super(ModelNew, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding
        )
        self.batch_norm = nn.BatchNorm2d(out_channels)
        # Use GroupNorm module to hold learnable parameters.
        self.group_norm = nn.GroupNorm(num_groups=num_groups, num_channels=out_channels)
        self.num_groups = num_groups

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.batch_norm(x)
        x = fused_pool_tanh_groupnorm(x, self.group_norm.weight, self.group_norm.bias,
                                      self.num_groups, self.group_norm.eps)
        return x
