"""What a spare candidate process starts while it waits for a candidate, so that the verdict
that gets it does not pay for it: the CUDA context, and what the last candidate's first calls
started (the profiler, the vendor libraries' handles). The runner host (runner/host.py) forks
a spare only once the last candidate is gone, and hands it out once it has started.
"""

from __future__ import annotations

SPARE_LIBRARIES = ("cublas", "cudnn")  # the vendor libraries whose handles a spare can make


def start_cuda(profiler: bool = False, libraries: tuple[str, ...] = ()) -> None:
    """Make the CUDA context (a few tenths of a second on an H200) before any request comes, and
    what the last candidate's first calls started: the profiler (CUPTI's first start) when the
    task's verdicts profile the kernels, and the handles of the vendor libraries it called
    (cuBLAS's took 0.076 s of a matrix-product candidate's first run on an H100)."""
    try:
        import torch

        if torch.cuda.is_available():
            torch.empty(1, device="cuda")
            if profiler:
                from kernelevo.checks.opwatch import profile_kernels

                profile_kernels(lambda: torch.ones(1, device="cuda").add_(1))
            if "cublas" in libraries:
                a = torch.ones(8, 8, device="cuda")
                torch.addmm(a[0], a, a)  # cuBLASLt's handle
                torch.mm(a, a)
            if "cudnn" in libraries:
                x = torch.ones(1, 1, 4, 4, device="cuda")
                torch.nn.functional.conv2d(x, torch.ones(1, 1, 3, 3, device="cuda"))
            torch.cuda.synchronize()
    except Exception:  # the candidate meets the same fault at load and reports it
        pass
