"""On a GPU: the candidate host's spare child has started CUDA (libcuda mapped) before it is
handed a candidate, so a verdict does not wait for that."""

import json

import pytest
import torch
from support import fresh_python

pytestmark = pytest.mark.gpu

SCRIPT = r"""
import json, os, time
from kernelevo.runner.host import Host

host = Host("candidate")
pid = host.spare[0]
deadline = time.monotonic() + 60
mapped = False
while time.monotonic() < deadline and not mapped:
    mapped = "libcuda.so" in open(f"/proc/{pid}/maps").read()
    time.sleep(0.1)
opened = host.open(set()).wire()
host.close(final=True)
print(json.dumps({"mapped": mapped, "opened": opened, "pid": pid}), flush=True)
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_the_spare_has_started_cuda_before_it_gets_a_candidate(tmp_path):
    out = fresh_python(
        SCRIPT, cwd=tmp_path, env={"HOME": str(tmp_path)}, inherit=False, timeout=300
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert out.returncode == 0 and lines, out.stderr[-3000:]
    seen = json.loads(lines[-1])
    assert seen["mapped"], "the spare child never loaded libcuda"
    assert seen["opened"]["opened"] == seen["pid"] and seen["opened"]["spare"] is True
