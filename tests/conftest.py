import os

import pytest
from support import DEVICE, HAS_GPU

# `kernelevo verify` in a test judges in its own process: no background verification service
# outlives a test (tests/test_verify_service.py starts its own, in private folders)
os.environ.setdefault("KERNELEVO_SERVICE", "off")
# what the judge keeps on disk (baselines, passed task probes) goes to a folder of this test run
if "KERNELEVO_STATE" not in os.environ:
    import tempfile

    os.environ["KERNELEVO_STATE"] = tempfile.mkdtemp(prefix="kernelevo-test-state-")


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _heap_given_back():
    """A judge run inside a test sets the heap aside from the collector (judge/reference.py's
    settle_heap), as its own process does; the test process takes it back after each test."""
    import gc

    yield
    gc.unfreeze()


@pytest.fixture(scope="session")
def evaluator():
    """One pair of worker processes for the whole session: what a search does too."""
    from kernelevo.evaluate import Evaluator

    ev = Evaluator(DEVICE)
    ev.warm()
    yield ev
    ev.close()


def pytest_runtest_logreport(report):
    """With KERNELEVO_FAILURES=FILE, each failure's report is appended as it happens: a GPU run
    stopped by its time limit still leaves the reasons behind (pytest prints them only at the end)."""
    import os

    path = os.environ.get("KERNELEVO_FAILURES")
    if path and report.failed:
        with open(path, "a") as f:
            f.write(f"=== {report.nodeid} ({report.when})\n{report.longreprtext[-4000:]}\n")
