"""On a GPU: a candidate's load answers only once the GPU work its constructor queued has run, so
a verdict that steps aside after the load (kernelevo/gpu_gate.py) leaves nothing of its own running
beside another verdict's timing."""

import pytest
import torch
from support import CANDIDATES, EXAMPLES

from kernelevo.verify import verify_candidate

pytestmark = pytest.mark.gpu

# queued, not waited for: 48 fp32 products of 8192 x 8192 (1.1 TFLOP each) take >= 0.6 s on an
# H100 or H200 without TF32 (torch's default); a private sleep kernel would be refused statically
SLEEP = """
        a = torch.full((8192, 8192), 1 / 8192, device="cuda")
        for _ in range(48):
            a = a @ a
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_the_load_waits_for_the_gpu_work_the_constructor_queued(tmp_path, evaluator):
    source = (CANDIDATES / "softmax" / "triton_ok.py").read_text()
    marker = "        super().__init__()\n"
    assert marker in source
    slow = tmp_path / "slow_init.py"
    slow.write_text(source.replace(marker, marker + SLEEP, 1))
    v = verify_candidate(EXAMPLES / "softmax.py", slow, evaluator=evaluator, device="cuda")
    assert v.status == "verified", (v.status, v.reason)
    assert v.phases["load_s"] >= 0.4, v.phases  # the queued sleep was waited for inside the load
