"""Static checks: each forbidden pattern has a reason a model can act on."""

import pytest

from kernelevo.verify.static import check_source

KERNEL = "import torch, triton\nimport triton.language as tl\n@triton.jit\ndef k(p):\n    pass\n"
MODEL = "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def test_clean_triton_candidate():
    r = check_source(KERNEL + MODEL)
    assert r.ok and r.backend == "triton" and r.jit_kernels == ["k"]


@pytest.mark.parametrize(
    "snippet,needle",
    [
        (
            "def f(x):\n    try:\n        return k[(1,)](x)\n    except Exception:\n        return torch.relu(x)\n",
            "computes a result another way",
        ),
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
    ],
)
def test_forbidden(snippet, needle):
    r = check_source(KERNEL + snippet + MODEL)
    assert not r.ok
    assert any(needle in p for p in r.problems), r.problems


def test_subclassing_model():
    r = check_source(KERNEL + "from task import Model\nclass ModelNew(Model):\n    pass\n")
    assert any("subclasses Model" in p for p in r.problems)


def test_import_only_try_is_allowed():
    r = check_source(
        "try:\n    import triton\nexcept ImportError:\n    triton = None\n" + KERNEL + MODEL
    )
    assert r.ok, r.problems


def test_backends_detected():
    cuda = "import torch\nfrom kernelevo import cuda\nmod = cuda.compile('x')\n" + MODEL
    inline = (
        "import torch\nfrom torch.utils.cpp_extension import load_inline\nm = load_inline(name='a', cpp_sources='')\n"
        + MODEL
    )
    assert check_source(cuda).backend == "cuda"
    assert check_source(inline).backend == "cuda_inline"
    r = check_source("import torch\n" + MODEL)
    assert r.backend == "none" and any("no kernel" in p for p in r.problems)


def test_syntax_error_names_line():
    r = check_source(KERNEL + "def broken(:\n", "cand.py")
    assert r.syntax_error and "cand.py:6" in r.syntax_error


@pytest.mark.parametrize(
    "snippet,needle",
    [
        ("S = getattr(torch.cuda, 'Stream')\n", "getattr"),
        ("import sys\nT = sys.modules['threading']\n", "sys.modules"),
        ("import importlib\n", "importlib"),
        ("import os\nos.abort()\n", "abort"),
        ("import faulthandler\n", "faulthandler"),
    ],
)
def test_indirect_escapes_rejected(snippet, needle):
    r = check_source(KERNEL + snippet + MODEL)
    assert any(needle in p for p in r.problems), r.problems


def test_getattr_refused_even_on_self():
    r = check_source(
        KERNEL
        + "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return getattr(self, 'w', x)\n"
    )
    assert any("line 8: getattr() on self" in p for p in r.problems), r.problems


# -- the allowlist: what a Python candidate may import and touch -----------------------------
@pytest.mark.parametrize(
    "snippet,needle",
    [
        ("import io\n", "line 6: import of io is not allowed"),
        ("import os\n", "line 6: import of os is not allowed"),
        (
            "from torch.utils.cpp_extension import load_inline\nimport time\n",
            "line 7: import of time",
        ),
        ("from . import helper\n", "relative imports"),
        ("from kernelevo import store\n", "import of kernelevo.store is not allowed"),
        ("C = torch.__class__\n", "line 6: attribute __class__ is off limits"),
        ("B = vars(torch)\n", "line 6: vars() is not allowed"),
        ("G = globals()\n", "globals() is not allowed"),
        ("f = open('/etc/passwd')\n", "open() is not allowed: it reads or writes files"),
        ("m = __import__('os')\n", "__import__"),
        ("c = compile('1', 'x', 'eval')\n", "compile() is not allowed"),
        ("o = setattr(torch.nn, 'x', 1)\n", "setattr() on torch.nn"),
        ("E = torch.os.environ\n", "line 6: torch.os is not allowed: it reaches the os module"),
        ("M = triton.sys.modules\n", "triton.sys is not allowed"),
        ("M = torch.hub.sys.modules\n", "line 6: torch.hub.sys is not allowed: it reaches the sys"),
        ("R = torch.utils.cpp_extension.subprocess.run\n", "reaches the subprocess module"),
        ("L = tl.core.builtins\n", "tl.core.builtins is not allowed"),
        ("F2 = torch.nn.functional.torch.cuda.ctypes\n", "reaches the ctypes module"),
        ("from torch.hub import os\n", "line 6: from torch.hub import os is not allowed"),
        ("from triton.runtime.jit import sys as s\n", "reaches the sys module"),
        (
            "from torch.utils._python_dispatch import _disable_current_modes\n",
            "line 6: torch.utils._python_dispatch is not allowed: private internals (torch's",
        ),
        ("G = torch._C._get_tracing_state\n", "line 6: torch._C is not allowed"),
        ("import torch._dynamo as d\n", "torch._dynamo is not allowed"),
        ("m = torch._import_dotted_name('sys')\n", "torch._import_dotted_name is not allowed"),
        (
            "from torch._inductor.runtime import triton_helpers\nx = triton_helpers._log2\n",
            "torch._inductor.runtime.triton_helpers._log2 is not allowed",
        ),
        ("from torch._inductor import config\n", "torch._inductor is not allowed"),
        ("import typing\nE = typing._eval_type\n", "line 7: typing._eval_type is not allowed"),
        (
            "from functools import _lru_cache_wrapper\n",
            "functools._lru_cache_wrapper is not allowed",
        ),
        (
            "from kernelevo import cuda\nS = cuda.sys\n",
            "line 7: cuda.sys is not allowed: it reaches the sys",
        ),
        ("S = torch.Tensor._make_subclass\n", "torch.Tensor._make_subclass is not allowed"),
        (
            "@torch.library.custom_op('my::op', mutates_args=())\ndef op(x: torch.Tensor) -> torch.Tensor:\n"
            "    return x\n",
            "line 6: torch.library is not allowed: an operator registered by the candidate runs its body",
        ),
        ("from torch.library import custom_op\n", "line 6: torch.library is not allowed"),
        ("torch.ops.load_library('x.so')\n", "torch.ops.load_library is not allowed"),
        (
            "G = torch.cuda.CUDAGraph()\n",
            "torch.cuda.CUDAGraph: a CUDA graph replays work captured",
        ),
        (
            "from torch.cuda import graph\nwith graph(None):\n    pass\n",
            "torch.cuda.graph: a CUDA graph",
        ),
        ("f = torch.cuda.make_graphed_callables(None, ())\n", "torch.cuda.make_graphed_callables"),
    ],
)
def test_allowlist_refuses_with_line(snippet, needle):
    r = check_source(KERNEL + snippet + MODEL)
    assert not r.ok and any(needle in p for p in r.problems), r.problems


def test_allowlist_admits_the_kernel_languages_and_helpers():
    src = (
        "from __future__ import annotations\nimport math\nimport torch\nimport torch.nn as nn\n"
        "import torch.nn.functional as F\nimport triton\nimport triton.language as tl\nfrom typing import Optional\n"
        "from kernelevo import cuda\nimport functools, itertools, collections.abc\n"
        "from torch.utils.cpp_extension import load_inline\n"
        "@triton.jit\ndef k(p):\n    pass\n"
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        nn.Module.__init__(self)\n    def forward(self, x):\n        return x.eval() if False else x\n"
    )
    r = check_source(src)
    assert r.ok, r.problems


@pytest.mark.parametrize(
    "snippet",
    [
        "fan = torch.nn.init._calculate_fan_in_and_fan_out\n",  # published kernels' weight init
        "sm = torch.ops.aten._softmax\n",  # an operator: it goes through the dispatcher
        "mm = torch._scaled_mm\n",  # so is a private function on torch itself (FP8 GEMM)
        "torch._assert(True, 'ok')\n",
        # Inductor's Triton device helpers, as kernels taken from Inductor's output import them
        "from torch._inductor.runtime import triton_helpers\nm = triton_helpers.maximum\n",
        "from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\n",
    ],
)
def test_the_private_names_real_kernels_use_are_admitted(snippet):
    r = check_source(KERNEL + snippet + MODEL)
    assert r.ok, r.problems


def test_specific_reason_comes_before_the_allowlist():
    r = check_source(KERNEL + "import os\nos._exit(0)\n" + MODEL)
    assert "exiting the process" in r.problems[0], r.problems


# -- try/except: only fallbacks and swallowed kernel errors are refused ------------------------
@pytest.mark.parametrize(
    "snippet",
    [
        "try:\n    SM = torch.cuda.get_device_properties(0).multi_processor_count\nexcept Exception:\n    SM = 108\n",
        "try:\n    import triton.language.extra.cuda.libdevice as libdevice\nexcept ImportError:\n    "
        "libdevice = None\n",
        "def launch(x):\n    try:\n        k[(1,)](x)\n    except RuntimeError as e:\n        raise "
        "RuntimeError(f'kernel failed: {e}')\n",
        "try:\n    CFG = int('8')\nexcept ValueError:\n    warnings.warn('default config')\n    CFG = 4\n",
    ],
)
def test_harmless_try_except_accepted(snippet):
    r = check_source("import warnings\n" + KERNEL + snippet + MODEL)
    assert r.ok, r.problems


def test_try_except_swallowing_a_launch_refused():
    r = check_source(
        KERNEL
        + "def launch(x):\n    try:\n        k[(1,)](x)\n    except Exception:\n        pass\n"
        + MODEL
    )
    assert any("swallows errors from a kernel launch" in p and "line 7" in p for p in r.problems), (
        r.problems
    )


# -- messages that say what happened -------------------------------------------------------------
@pytest.mark.parametrize(
    "snippet,needle",
    [
        (
            "torch.backends.cudnn.benchmark = True\n",
            "assigning torch.backends.cudnn.benchmark changes global state that the reference and the baselines share",
        ),
        ("torch.backends.cuda.matmul.allow_tf32 = True\n", "ALLOW_TF32"),
        (
            "torch.set_float32_matmul_precision('high')\n",
            "torch.set_float32_matmul_precision: it lets",
        ),
        ("with torch.backends.cudnn.flags(allow_tf32=True):\n    pass\n", "ALLOW_TF32"),
        ("import time\ntime.perf_counter = lambda: 0\n", "patches what the timer uses"),
        ("torch.allclose = lambda *a: True\n", "patches what the correctness checks use"),
    ],
)
def test_assignment_messages_say_what_happened(snippet, needle):
    r = check_source(KERNEL + snippet + MODEL)
    assert any(needle in p for p in r.problems), r.problems


# -- CUDA C++ sources: host threads and other streams ---------------------------------------------
@pytest.mark.parametrize(
    "code,needle",
    [
        ("std::thread t([]{ k<<<1,1>>>(); });", "std::thread"),
        ("pthread_create(&t, 0, f, 0);", "pthread_create"),
        ("auto f = std::async(std::launch::async, g);", "std::async"),
        ("cudaLaunchHostFunc(s, cb, 0);", "cudaLaunchHostFunc"),
        ("cudaStream_t s; cudaStreamCreate(&s);", "cudaStreamCreate"),
        ("auto s = at::cuda::getStreamFromPool();", "getStreamFromPool"),
        (
            "c10::impl::ExcludeDispatchKeyGuard g(c10::DispatchKey::Python);",
            "ExcludeDispatchKeyGuard is not allowed: changing the dispatcher's keys hides",
        ),
        ("at::AutoDispatchBelowADInplaceOrView g;", "AutoDispatchBelowADInplaceOrView"),
        ("auto y = at::native::softmax(x, 1, false);", "native::softmax is not allowed"),
        (
            'PyRun_SimpleString("import sys");',
            "PyRun_SimpleString is not allowed: the Python C API",
        ),
        ('auto sys = py::module_::import("sys");', "py::module_::import is not allowed"),
        ('PyObject* m = PyImport_ImportModule("gc");', "PyImport_ImportModule"),
        ("cudaGraph_t g; cudaStreamBeginCapture(s, m);", "cudaStreamBeginCapture is not allowed"),
        ("cudaGraphLaunch(e, s);", "cudaGraphLaunch"),
        ("#include <ATen/CUDAFunctions.h>", "ATen/CUDAFunctions.h is not allowed"),
        ("#include <ATen/ops/_softmax_cuda_dispatch.h>", "_softmax_cuda_dispatch.h is not allowed"),
        (
            "auto y = at::_ops::_softmax::redispatch(ks, x, 1, false);",
            "::redispatch is not allowed",
        ),
        (
            'TORCH_LIBRARY(my, m) { m.def("op(Tensor x) -> Tensor"); }',
            "TORCH_LIBRARY is not allowed",
        ),
    ],
)
def test_native_sources_refused(code, needle):
    src = (
        "import torch\nfrom torch.utils.cpp_extension import load_inline\n"
        f'SRC = """\n#include <torch/extension.h>\n__global__ void k() {{}}\nvoid run() {{\n  {code}\n}}\n"""\n'
        "mod = load_inline(name='a', cpp_sources='', cuda_sources=SRC)\n" + MODEL
    )
    r = check_source(src)
    assert any(needle in p and "line 7 (CUDA source)" in p for p in r.problems), r.problems


def test_the_cuda_helpers_real_kernels_use_pass():
    src = (
        "import torch\nfrom torch.utils.cpp_extension import load_inline\n"
        'SRC = """\n#include <torch/extension.h>\n__global__ void k() {}\nvoid run() {\n'
        "  auto s = at::cuda::getCurrentCUDAStream();\n  const at::cuda::OptionalCUDAGuard g;\n"
        "  int w = at::cuda::warp_size();\n"
        '  k<<<1, 1, 0, s>>>();\n}\n"""\n'
        "mod = load_inline(name='a', cpp_sources='', cuda_sources=SRC)\n" + MODEL
    )
    assert check_source(src).ok, check_source(src).problems


def test_native_pattern_in_a_comment_passes():
    src = (
        "import torch\nfrom torch.utils.cpp_extension import load_inline\n"
        'SRC = """\n#include <torch/extension.h>\n// no std::thread here\n__global__ void k() {}\n"""\n'
        "mod = load_inline(name='a', cpp_sources='', cuda_sources=SRC)\n" + MODEL
    )
    assert check_source(src).ok


def test_numpy_only_for_scalar_types_and_maths_on_literals():
    ok = check_source("import numpy as np\n" + KERNEL + "N = np.int32(4)\n" + MODEL)
    assert ok.ok, ok.problems
    # Swin V2's relative-position table divides by np.log2(8) (a published, verified kernel)
    ok = check_source(
        "import numpy as np\n" + KERNEL + "A = np.log2(8) * np.pi / -np.sqrt(2 * 3.0)\n" + MODEL
    )
    assert ok.ok, ok.problems
    for line in ("A = np.exp(x)", "A = np.exp(1.0, out=x)", "A = np.sum(1.0)", "A = np.log2(N)"):
        r = check_source("import numpy as np\n" + KERNEL + line + "\n" + MODEL)
        name = line.split("np.")[1].split("(")[0].split(".")[0]
        assert any(f"line 7: numpy.{name} is not allowed" in p for p in r.problems), (
            line,
            r.problems,
        )
