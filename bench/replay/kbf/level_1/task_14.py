# level 1 index 14 agent name: KernelAgent 4o speedup: 1.14x

import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def optimized_triu_kernel(out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    row_start = (pid * BLOCK_SIZE) // n * BLOCK_SIZE
    col_start = (pid * BLOCK_SIZE) % n

    row = row_start + tl.arange(0, BLOCK_SIZE)
    col = col_start + tl.arange(0, BLOCK_SIZE)
    
    # Only load and compute when within bounds
    row_mask = row < n
    col_mask = col < n
    
    mat_idx = row[:, None] * n + col[None, :]
    
    # upper-triangular mask
    triu_mask = row[:, None] <= col[None, :]
    
    # Load, zeroing out lower triangular part
    x = tl.load(out_ptr + mat_idx, mask=row_mask[:, None] & col_mask[None, :] & triu_mask, other=0)
    tl.store(out_ptr + mat_idx, x, mask=row_mask[:, None] & col_mask[None, :] & triu_mask)

class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
    
    def forward(self, A, B):
        # Perform the cuBLAS matrix multiplication
        C = torch.matmul(A, B)
        
        # Given dimensions and block size, calculate grid size
        n = C.shape[0]
        grid = (triton.cdiv(n, 32 * 32),)
        
        # Launch the kernel, optimizing for the 4096x4096 case
        optimized_triu_kernel[grid](C, n, BLOCK_SIZE=32)
        
        return C

# Assume input matrices A and B are already on the GPU and contiguous
