"""The dispatcher on real GPUs: one worker per GPU, pinned with CUDA_VISIBLE_DEVICES.

With one GPU, an example verifies and is timed through the dispatcher and the verdict names
the GPU; with two or more, concurrent candidates come back from different GPUs, and each
worker really ran on the GPU it was given (torch's device UUID is NVML's for that index).

Run: pytest tests/gpu/test_multi_gpu.py -m gpu -v   (about 2 minutes on 2 H200s).
"""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from support import CANDIDATES, EXAMPLES

from kernelevo.dispatch.local import LocalDispatcher, visible_gpus
from kernelevo.measure.gpus import gpus as nvml_gpus

pytestmark = pytest.mark.gpu
SOFTMAX = EXAMPLES / "softmax.py"
GOOD = (CANDIDATES / "softmax" / "triton_ok.py").read_text()


def _uuid(u: str) -> str:
    return u.lower().removeprefix("gpu-")


def test_single_gpu_path_through_the_dispatcher(tmp_path):
    first = visible_gpus()[0][0]
    cand = tmp_path / "cand.py"
    cand.write_text(f"{GOOD}\n# nonce {time.time()}\n")
    with LocalDispatcher("cuda", gpus=[first] if isinstance(first, int) else None) as d:
        verdict = d.evaluate(SOFTMAX, cand, 0)
        assert d.stats()["evaluations"] == 1
    assert verdict.status == "verified", verdict.reason
    assert verdict.timings["candidate_ms"] > 0 and verdict.timings["speedup_eager"] > 0
    assert (
        verdict.device["gpu_index"] == first and verdict.device["gpu_name"] == visible_gpus()[0][1]
    )
    assert verdict.device["attempts"] == 1 and verdict.device["worker"] == f"gpu{first}"


def test_candidates_spread_over_gpus_each_worker_on_its_own(tmp_path):
    rows = {g.index: g for g in nvml_gpus()}
    if len(rows) < 2:
        pytest.skip("needs 2 GPUs")
    gpus = sorted(rows)[:2]
    paths = []
    for i in range(6):
        p = tmp_path / f"cand{i}.py"
        p.write_text(f"{GOOD}\n# nonce {i} {time.time()}\n")
        paths.append(p)
    with LocalDispatcher("cuda", gpus=gpus) as d:
        d.warm()
        with ThreadPoolExecutor(len(gpus)) as ex:
            verdicts = list(ex.map(lambda p: d.evaluate(SOFTMAX, p, 0), paths))
    assert [v.status for v in verdicts] == ["verified"] * len(paths), [v.reason for v in verdicts]
    assert {v.device["gpu_index"] for v in verdicts} == set(gpus)
    for v in verdicts:  # the worker saw only its GPU, as torch's device 0, and it is the one named
        assert v.device["index"] == 0
        assert _uuid(v.device["uuid"]) == _uuid(rows[v.device["gpu_index"]].uuid)
