"""kernelevo/cuda_ipc.py without a GPU: the engine loads neither it nor the CUDA bindings (the
judge and the candidate process import torch, which itself loads cuda.bindings where it is
installed, torch 2.13 from torch.cuda._utils), a bad handle or a
tensor not in a block of its own is refused before any CUDA call, and with no GPU there is no
CUDA IPC (the engine uses files)."""

import pytest
import torch
from support import fresh_python

from kernelevo import cuda_ipc


def test_the_engine_loads_no_cuda_bindings():
    code = (
        "import sys, kernelevo.verify, kernelevo.evaluate, kernelevo.search.loop\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cuda' or 'cuda_ipc' in m))\n"
    )
    out = fresh_python(code)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_a_handle_of_the_wrong_length_is_refused_before_any_cuda_call():
    with pytest.raises(cuda_ipc.CudaIpcError, match="64 bytes"):
        cuda_ipc.open_handle(b"\1" * 63, 16, 0)


def test_a_tensor_not_in_a_block_of_its_own_has_no_handle():
    with pytest.raises(cuda_ipc.CudaIpcError, match="not in an allocation of its own"):
        cuda_ipc.handle_of(torch.ones(4))
    assert not cuda_ipc.owned(torch.ones(4))


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without a GPU")
def test_without_a_gpu_cuda_ipc_is_unavailable(monkeypatch):
    monkeypatch.setattr(cuda_ipc, "_works", None)
    assert cuda_ipc.available() is False
