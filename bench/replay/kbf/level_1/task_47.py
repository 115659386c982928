# level 1 index 47 agent name: KernelAgent O3 Mini High speedup: 1.96x

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Supported input shape parameters.
BATCH_SIZE = 16
DIM1 = 256  # reduction dimension (must be power of 2)
DIM2 = 256  # remaining dimension

# Fused kernel: Performs a sum reduction over the reduction dimension and writes
# the result directly into an output of shape (B, 1, K). Each kernel instance processes
# a contiguous tile of BLOCK_K columns from the input.
@triton.jit
def fused_sum_reduction_kernel(x_ptr, out_ptr, B: tl.constexpr, I: tl.constexpr, K: tl.constexpr, BLOCK_K: tl.constexpr):
    """
    Each kernel instance reduces over the I dimension (reduction axis) for a contiguous
    tile of width BLOCK_K along the K axis of an input tensor of shape (B, I, K) and writes
    the result directly into an output tensor of shape (B, 1, K).

    Grid launch:
       grid_size = B * (K // BLOCK_K)

    For a given kernel instance (with program id pid):
       b      = pid // (K // BLOCK_K)
       block_k = pid % (K // BLOCK_K)
       kstart  = block_k * BLOCK_K
    """
    # Calculate which batch (b) and which tile (block_k) this instance handles.
    pid = tl.program_id(0)
    cols_per_inst = K // BLOCK_K
    b = pid // cols_per_inst
    block_k = pid % cols_per_inst
    kstart = block_k * BLOCK_K

    # Base offset for batch b in the flattened input.
    base = b * I * K

    # Generate indices for the reduction dimension (rows) and the tile columns.
    r = tl.arange(0, I)
    offset_k = kstart + tl.arange(0, BLOCK_K)

    # Calculate offsets for the (I x BLOCK_K) block.
    offsets = base + r[:, None] * K + offset_k[None, :]

    # Load the block, perform reduction on the I dimension, and store the result.
    vals = tl.load(x_ptr + offsets)
    acc = tl.sum(vals, axis=0)

    # Write the reduced result directly into output; output is contiguous of shape (B, 1, K)
    out_offset = b * K + offset_k
    tl.store(out_ptr + out_offset, acc)


class ModelNew(nn.Module):
    """
    Optimized model that performs a sum reduction along dimension 1 using a fused Triton kernel.
    The kernel computes the sum over the reduction dimension and writes the result directly into
    the output shape (16, 1, 256), removing the need for a separate reshape.
    """
    def __init__(self, dim: int):
        """
        Initializes the model.
        
        Args:
            dim (int): Dimension to reduce over. This optimized ModelNew only supports reduction over dim=1.
        """
        super(ModelNew, self).__init__()
        if dim != 1:
            raise ValueError("This optimized ModelNew only supports reduction over dim=1.")
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies a fused sum reduction over dimension 1 using a custom Triton kernel which performs
        both the reduction and reshape in a single kernel call.
        
        Args:
            x (torch.Tensor): Input tensor of shape (16, 256, 256) with dtype=torch.float32.
        
        Returns:
            torch.Tensor: Output tensor of shape (16, 1, 256) with dtype=torch.float32.
        """
        B, I, K = x.shape
        # Allocate output tensor directly in the final shape (B, 1, K)
        out = torch.empty((B, 1, K), device=x.device, dtype=x.dtype)
        # Determine grid: one instance per BLOCK_K tile across the K dimension for each batch.
        grid = lambda meta: (B * (K // meta["BLOCK_K"]),)
        # Launch the kernel with BLOCK_K = 16.
        fused_sum_reduction_kernel[grid](x, out, B, I, K, BLOCK_K=16)
        return out


def get_inputs():
    """
    Returns:
        List[torch.Tensor]: A single input tensor of shape (16, 256, 256) on the CUDA device.
    """
    x = torch.randn(BATCH_SIZE, DIM1, DIM2, dtype=torch.float32, device="cuda")
    return [x]


def get_init_inputs():
    """
    Returns:
        List[int]: Initialization input, corresponding to dim=1.
    """
    return [1]
