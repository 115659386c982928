"""On a GPU: a tensor the judge exports (kernelevo/cuda_ipc.py, a block of its own) is mapped by
another process as written, that process's writes are seen by the exporter, and a verdict goes
through CUDA IPC, not files (`phases.transport`)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support import CANDIDATES, EXAMPLES

from kernelevo.tensor_channel import export_tensor

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]

OPENER = r"""
import json, sys
import torch
from kernelevo import tensor_channel
tensor_channel.accept_cuda_ipc()
desc = json.loads(sys.argv[1])
desc["cuda_ipc"]["handle"] = bytes.fromhex(desc["cuda_ipc"]["handle"])
t = tensor_channel.open_tensor(desc, "/nonexistent", 1 << 30)
print(json.dumps({"sum": float(t.sum()), "shape": list(t.shape)}), flush=True)
t.mul_(2)
torch.cuda.synchronize()
"""


def test_a_block_crosses_to_another_process_both_ways(tmp_path):
    src = torch.arange(3 * 1000, dtype=torch.float32, device="cuda").reshape(3, 1000)[:, 10:]
    desc = export_tensor(src, str(tmp_path), "x", via="ipc")
    assert "cuda_ipc" in desc and "file" not in desc
    from kernelevo.tensor_channel import _kept

    shared = _kept[-1]  # the copy the other process maps
    wire = {**desc, "cuda_ipc": {**desc["cuda_ipc"], "handle": desc["cuda_ipc"]["handle"].hex()}}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", OPENER, json.dumps(wire)], capture_output=True, text=True, env=env
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"sum": float(src.sum()), "shape": [3, 990]}
    assert torch.equal(shared, src * 2)  # the other process wrote the judge's block


def test_a_verdict_on_the_gpu_goes_through_cuda_ipc():
    from kernelevo.verify import verify_candidate

    v = verify_candidate(
        EXAMPLES / "softmax.py", CANDIDATES / "softmax" / "triton_ok.py", use_cache=False
    )
    assert v.status == "verified", v.reason
    assert v.phases.get("transport") == "ipc", v.phases
