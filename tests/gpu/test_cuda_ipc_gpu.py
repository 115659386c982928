"""On a GPU: a tensor the judge exports (kernelevo/cuda_ipc.py, a block of its own) is mapped by
another process as written (dtype, shape, strides, offset; zero elements too), that process's
writes are seen by the exporter, the other process maps a handle once and unmaps it when its
tensors go, a block is freed when its last tensor goes, and a verdict goes through CUDA IPC, not
files (`phases.transport`)."""

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from support import CANDIDATES, EXAMPLES

from kernelevo import cuda_ipc
from kernelevo.tensor_channel import _kept, export_tensor

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]

OPENER = r"""
import gc, json, sys
import torch
from kernelevo import cuda_ipc, tensor_channel
tensor_channel.accept_cuda_ipc()
arg = json.loads(sys.argv[1])
desc = arg["desc"]
desc["cuda_ipc"]["handle"] = bytes.fromhex(desc["cuda_ipc"]["handle"])
try:
    t = tensor_channel.open_tensor(desc, "/nonexistent", 1 << 30)
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
    sys.exit(0)
seen = {"values": t.cpu().tolist(), "shape": list(t.shape), "dtype": str(t.dtype)}
if arg["write"]:
    t.mul_(2)
    torch.cuda.synchronize()
if arg["close"]:
    from cuda.bindings import driver as cu
    ptr = t.untyped_storage().data_ptr()
    again = tensor_channel.open_tensor(desc, "/nonexistent", 1 << 30)
    seen["mapped_once"] = again.untyped_storage().data_ptr() == ptr
    seen["mapped_before"] = cu.cuMemGetAddressRange(ptr)[0] == cu.CUresult.CUDA_SUCCESS
    del t, again
    gc.collect()
    seen["forgotten"] = not cuda_ipc._opened
    seen["mapped_after"] = cu.cuMemGetAddressRange(ptr)[0] == cu.CUresult.CUDA_SUCCESS
print(json.dumps(seen), flush=True)
"""


def _open_elsewhere(desc: dict[str, Any], write: bool = False, close: bool = False) -> Any:
    """What a second process saw opening `desc` (it doubles the values with `write`)."""
    wire = {**desc, "cuda_ipc": {**desc["cuda_ipc"], "handle": desc["cuda_ipc"]["handle"].hex()}}
    arg = json.dumps({"desc": wire, "write": write, "close": close})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", OPENER, arg], capture_output=True, text=True, env=env, timeout=120
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert lines, out.stderr[-3000:]
    return json.loads(lines[-1])


def test_a_block_crosses_to_another_process_both_ways(tmp_path):
    src = torch.arange(3 * 1000, dtype=torch.float32, device="cuda").reshape(3, 1000)[:, 10:]
    desc = export_tensor(src, str(tmp_path), "x", via="ipc")
    assert "cuda_ipc" in desc and "file" not in desc
    assert len(desc["cuda_ipc"]["handle"]) == cuda_ipc.HANDLE_BYTES
    shared = _kept[-1]  # the copy the other process maps
    seen = _open_elsewhere(desc, write=True)
    assert seen["values"] == src.cpu().tolist() and seen["shape"] == [3, 990]
    assert torch.equal(shared, src * 2)  # the other process wrote the judge's block


def test_a_view_of_a_block_of_its_own_crosses_in_place_with_its_strides(tmp_path):
    whole = cuda_ipc.empty(60, torch.float16, torch.device("cuda")).view(6, 10)
    whole.copy_(torch.arange(60, dtype=torch.float16).view(6, 10))
    view = whole[1:, 2:7]
    kept = len(_kept)
    desc = export_tensor(view, str(tmp_path), "v", via="ipc")
    assert len(_kept) == kept, "a tensor already in a block of its own is not copied"
    assert (desc["offset"], desc["stride"], desc["cuda_ipc"]["size"]) == (12, [10, 1], 120)
    before = view.cpu().tolist()  # the other process doubles the view in place
    seen = _open_elsewhere(desc, write=True)
    assert seen["values"] == before and seen["dtype"] == "torch.float16"
    want = torch.arange(60, dtype=torch.float16, device="cuda").view(6, 10)
    want[1:, 2:7] *= 2
    assert torch.equal(whole, want)  # the view's elements doubled, the rest untouched


def test_a_zero_element_tensor_crosses(tmp_path):
    desc = export_tensor(torch.empty(0, 5, device="cuda"), str(tmp_path), "z", via="ipc")
    seen = _open_elsewhere(desc)
    assert seen == {"values": [], "shape": [0, 5], "dtype": "torch.float32"}


def test_the_other_process_maps_a_handle_once_and_unmaps_it_when_its_tensors_go(tmp_path):
    desc = export_tensor(torch.ones(256, device="cuda"), str(tmp_path), "o", via="ipc")
    seen = _open_elsewhere(desc, close=True)
    assert seen["values"] == [1.0] * 256
    assert seen["mapped_once"] and seen["mapped_before"] and seen["forgotten"], seen
    assert not seen["mapped_after"], "cuIpcCloseMemHandle did not unmap the block"


def test_a_block_is_freed_when_its_last_tensor_goes():
    # asked of the driver by address: free memory is device-wide, other processes move it
    nbytes = 256 << 20
    t = cuda_ipc.empty(nbytes // 4, torch.float32, torch.device("cuda"))
    ptr = t.data_ptr()
    d = cuda_ipc._driver_on(t.device.index or 0)
    err, _base, size = d.cu.cuMemGetAddressRange(ptr)
    ok = d.cu.CUresult.CUDA_SUCCESS
    assert cuda_ipc.owned(t) and err == ok and int(size) >= nbytes, (err, size)
    del t
    gc.collect()
    assert ptr not in cuda_ipc._own
    err, _base, _size = d.cu.cuMemGetAddressRange(ptr)
    assert err != ok, "cuMemFree did not free the block: the driver still maps its address"


def test_a_verdict_on_the_gpu_goes_through_cuda_ipc():
    from kernelevo.verify import verify_candidate

    v = verify_candidate(
        EXAMPLES / "softmax.py", CANDIDATES / "softmax" / "triton_ok.py", use_cache=False
    )
    assert v.status == "verified", v.reason
    assert v.phases.get("transport") == "ipc", v.phases
    assert v.phases.get("candidate_dynamo") is False, "the candidate process imported torch._dynamo"
