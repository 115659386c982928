"""A stored run for the real-editor tests that a CPU search cannot produce: its best kernel kept
the library GEMM, and another candidate passed only at TF32 tolerance (a CPU computes no TF32).
Written into the workspace's store before the editor opens the file, as the engine writes one
(kernelevo.search.stored_result.store_result); what the editor then shows and does is the real thing.
"""

from __future__ import annotations

import time
from pathlib import Path

# A GEMM with an epilogue, with example inputs.
PROJECT = """import torch


# kernelevo: inputs = (torch.randn(16, 32), torch.randn(32, 8))
def project(x, w):
    return torch.relu(x @ w)
"""
SPLIT = "keeps the cuBLAS GEMM; ReLU fused in one Triton kernel"
TF32_CHECK = (
    "relative L2 error 6.5e-04 above the fp32 bound; passes at TF32 tolerance (rel. error "
    "0.00065): accept lower precision with ALLOW_TF32 = True in the task or --allow-tf32"
)


def seed_tf32_result(path: Path) -> None:
    from kernelevo.store import ResultSummary, Store, default_store_path

    store_path = default_store_path(path.parent)
    store_path.parent.mkdir(parents=True, exist_ok=True)
    with Store(store_path) as store:
        store.put_result(
            ResultSummary(
                run_id="run-scripted-tf32",
                source_file=str(path),
                target_id="function:project",
                status="verified_unmeasured",
                backend="triton",
                verified=True,
                created_at=time.time(),
                outcome={"kind": "verified_unmeasured", "device": "cpu"},
                kept_library_ops=["aten.mm"],
                library_split=SPLIT,
                precision_offer={"level": "tf32", "rel_l2": 6.5e-4, "message": TF32_CHECK},
            )
        )
