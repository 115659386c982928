import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CANDIDATES = ROOT / "tests" / "candidates"


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


HAS_GPU = _has_gpu()
DEVICE = "cuda" if HAS_GPU else "cpu"


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def evaluator():
    """One pair of worker processes for the whole session: what a search does too."""
    from kernelevo.evaluate import Evaluator

    ev = Evaluator(DEVICE)
    yield ev
    ev.close()
