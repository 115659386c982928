# level 1 index 33 agent name: KernelAgent 4o speedup: 2.92x

import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def batchnorm_fused_kernel_optimized(
    input_ptr, output_ptr, C, H, W, eps, 
    weight_ptr, bias_ptr, running_mean_ptr, running_var_ptr,
    BLOCK_SIZE: tl.constexpr
):
    # Compute the batch, channel, and H*W indices
    batch_idx = tl.program_id(0)
    channel_idx = tl.program_id(1)
    pixel_idx = tl.program_id(2)

    offset = batch_idx * C * H * W + channel_idx * H * W
    pixel_offset = pixel_idx * BLOCK_SIZE

    mean = tl.load(running_mean_ptr + channel_idx)
    var = tl.load(running_var_ptr + channel_idx)
    gamma = tl.load(weight_ptr + channel_idx)
    beta = tl.load(bias_ptr + channel_idx)

    inv_std_gamma = gamma / tl.sqrt(var + eps)
    bias_term = beta - mean * inv_std_gamma

    idx = tl.arange(0, BLOCK_SIZE) + pixel_offset
    mask = idx < H * W

    input_data = tl.load(input_ptr + offset + idx, mask=mask, other=0.0)
    output_data = input_data * inv_std_gamma + bias_term
    tl.store(output_ptr + offset + idx, output_data, mask=mask)

class BatchNorm2dOptimized(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super(BatchNorm2dOptimized, self).__init__()
        self.num_features = num_features
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer('running_mean', torch.zeros(num_features))
        self.register_buffer('running_var', torch.ones(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N, C, H, W = x.shape
        output = torch.empty_like(x)
        
        grid = (N, C, (H * W + 256 - 1) // 256)
        
        batchnorm_fused_kernel_optimized[grid](
            x, output, C, H, W, self.eps,
            self.weight, self.bias, self.running_mean, self.running_var,
            BLOCK_SIZE=256
        )
        return output

class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super(ModelNew, self).__init__()
        self.bn = BatchNorm2dOptimized(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)
