# level 1 index 10 agent name: KernelAgent 4o speedup: 1.04x

import torch
import torch.nn as nn

class ModelNew(nn.Module):
    """
    Performs 3D tensor-matrix multiplication.
    """
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A, B):
        """
        Performs 3D tensor-matrix multiplication.

        Args:
            A (torch.Tensor): Input 3D tensor of shape (N, M, K).
            B (torch.Tensor): Input matrix of shape (K, L).

        Returns:
            torch.Tensor: Output tensor of shape (N, M, L).
        """
        # Utilize PyTorch matmul with ensured device context and handle GPU memory efficiently.
        # Using streams to enable asynchronous execution if appropriate.
        stream = torch.cuda.current_stream()
        with torch.cuda.stream(stream):  # Allows for asynchronous operation
            result = torch.empty((A.size(0), A.size(1), B.size(1)), device='cuda', dtype=torch.float32)
            torch.bmm(A, B.unsqueeze(0).expand(A.size(0), *B.size()), out=result)
        return result

def get_inputs():
    # Generate inputs directly on the GPU
    A = torch.randn(16, 1024, 2048, device='cuda', dtype=torch.float32)
    B = torch.randn(2048, 768, device='cuda', dtype=torch.float32)
    return [A, B]

def get_init_inputs():
    return []

# Note: The primary changes focus on using asynchronous streams and avoiding redundant operations.
# This version remains on the same device context throughout and minimizes data transfers.
