"""Static checks: each forbidden pattern has a reason a model can act on."""
import pytest

from kernelevo.verify.static import check_source

KERNEL = "import torch, triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n    pass\n"
MODEL = "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def test_clean_triton_candidate():
    r = check_source(KERNEL + MODEL)
    assert r.ok and r.backend == "triton" and r.jit_kernels == ["k"]


@pytest.mark.parametrize("snippet,needle", [
    ("try:\n    y = 1\nexcept Exception:\n    y = 2\n", "try/except"),
    ("import threading\n", "threading"),
    ("from concurrent.futures import ThreadPoolExecutor\n", "concurrent"),
    ("import subprocess\n", "subprocess"),
    ("import socket\n", "socket"),
    ("torch.allclose = lambda *a, **k: True\n", "torch.allclose"),
    ("torch.cuda.Event = object\n", "torch.cuda.Event"),
    ("import time\ntime.perf_counter = lambda: 0.0\n", "time.perf_counter"),
    ("setattr(torch, 'allclose', None)\n", "setattr"),
    ("s = torch.cuda.Stream()\n", "side streams"),
    ("class Lazy(torch.Tensor):\n    pass\n", "torch.Tensor"),
    ("import os\nos.system('ls')\n", "shell"),
    ("exec('x=1')\n", "exec"),
])
def test_forbidden(snippet, needle):
    r = check_source(KERNEL + snippet + MODEL)
    assert not r.ok
    assert any(needle in p for p in r.problems), r.problems


def test_subclassing_model():
    r = check_source(KERNEL + "from task import Model\nclass ModelNew(Model):\n    pass\n")
    assert any("subclasses Model" in p for p in r.problems)


def test_import_only_try_is_allowed():
    r = check_source("try:\n    import triton\nexcept ImportError:\n    triton = None\n" + KERNEL + MODEL)
    assert r.ok, r.problems


def test_backends_detected():
    cuda = "import torch\nfrom kernelevo import cuda\nmod = cuda.compile('x')\n" + MODEL
    inline = "import torch\nfrom torch.utils.cpp_extension import load_inline\nm = load_inline(name='a', cpp_sources='')\n" + MODEL
    assert check_source(cuda).backend == "cuda"
    assert check_source(inline).backend == "cuda_inline"
    r = check_source("import torch\n" + MODEL)
    assert r.backend == "none" and any("no kernel" in p for p in r.problems)


def test_syntax_error_names_line():
    r = check_source(KERNEL + "def broken(:\n", "cand.py")
    assert r.syntax_error and "cand.py:6" in r.syntax_error


@pytest.mark.parametrize("snippet,needle", [
    ("S = getattr(torch.cuda, 'Stream')\n", "getattr"),
    ("import sys\nT = sys.modules['threading']\n", "sys.modules"),
    ("import importlib\n", "importlib"),
    ("import os\nos.abort()\n", "abort"),
    ("import faulthandler\n", "faulthandler"),
])
def test_indirect_escapes_rejected(snippet, needle):
    r = check_source(KERNEL + snippet + MODEL)
    assert any(needle in p for p in r.problems), r.problems


def test_plain_getattr_on_self_allowed():
    r = check_source(KERNEL + "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return getattr(self, 'w', x)\n")
    assert r.ok, r.problems
