import pytest

from support import DEVICE, HAS_GPU


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
