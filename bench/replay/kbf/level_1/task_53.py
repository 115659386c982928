# level 1 index 53 agent name: KernelAgent 4o speedup: 1.92x

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Optimized Triton kernel for fused min reduction
@triton.jit
def optimized_min_reduction_kernel(x_ptr, out_ptr, dim1, dim2, BLOCK_SIZE: tl.constexpr, BLOCK_WIDTH: tl.constexpr):
    # Obtain the program ID for parallel execution
    pid = tl.program_id(0)
    
    # Calculate indices for the batch and column dimensions
    batch_idx = pid // (dim2 // BLOCK_WIDTH)
    col_start_idx = (pid % (dim2 // BLOCK_WIDTH)) * BLOCK_WIDTH
    batch_start_idx = batch_idx * dim1 * dim2
    
    # Initialize minimum values with a large number
    min_vals = tl.full((BLOCK_WIDTH,), float('inf'), dtype=tl.float32)
    
    # Iterate through blocks of the reduction dimension
    for row_offset in range(0, dim1, BLOCK_SIZE):
        row_indices = row_offset + tl.arange(0, BLOCK_SIZE)
        col_indices = col_start_idx + tl.arange(0, BLOCK_WIDTH)
        
        # Compute offsets for loading elements while ensuring indices do not exceed dimension limits
        x_offsets = batch_start_idx + row_indices[:, None] * dim2 + col_indices[None, :]
        x_offsets = tl.where(row_indices[:, None] < dim1, x_offsets, 0)
        
        # Load the block of elements, using inf where indices are invalid
        elements = tl.load(x_ptr + x_offsets, mask=(row_indices[:, None] < dim1), other=float('inf'))
        
        # Update minimum values along the specified dimension
        min_vals = tl.minimum(min_vals, tl.min(elements, axis=0))
    
    # Calculate output indices and store the reduced values
    out_indices = batch_idx * dim2 + col_start_idx + tl.arange(0, BLOCK_WIDTH)
    tl.store(out_ptr + out_indices, min_vals)

# Triton-based ModelNew
class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim
        if self.dim != 1:
            raise ValueError("This implementation only supports dim=1.")
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch_size, dim1, dim2 = x.shape
        out = torch.empty((batch_size, dim2), device=x.device, dtype=torch.float32)

        # Configure the kernel launch parameters
        BLOCK_SIZE = 128
        BLOCK_WIDTH = 8
        grid = (batch_size * (dim2 // BLOCK_WIDTH),)

        # Convert input to float32 for consistent computation
        x_fp32 = x.to(dtype=torch.float32)
        
        # Launch the optimized Triton kernel
        optimized_min_reduction_kernel[grid](x_fp32, out, dim1, dim2, BLOCK_SIZE, BLOCK_WIDTH)
        
        return out

# Function for generating inputs
def get_inputs():
    batch_size = 16
    dim1 = 256
    dim2 = 256
    x = torch.randn(batch_size, dim1, dim2)
    return [x]

# Function for initializing module with the correct dimension argument
def get_init_inputs():
    return [1]  # Fixed reduction dimension
