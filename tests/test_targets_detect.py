"""Target detection on the realistic corpus in tests/corpus/usercode (no torch import, exact ranges)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelevo.targets.detect import detect_file, detect_source
from kernelevo.targets.model import Detection, Target

CORPUS = Path(__file__).parent / "corpus" / "usercode"


def text_at(source: str, t: Target) -> str:
    """The text a Target's LSP range (UTF-16 columns, end exclusive) covers."""
    lines = source.split("\n")

    def offset(line: int, col16: int) -> int:
        units = 0
        for i, ch in enumerate(lines[line]):
            if units >= col16:
                return sum(len(x) + 1 for x in lines[:line]) + i
            units += 2 if ord(ch) > 0xFFFF else 1
        return sum(len(x) + 1 for x in lines[:line]) + len(lines[line])

    return source[offset(t.start_line, t.start_col) : offset(t.end_line, t.end_col)]


def ids(d: Detection) -> list[str]:
    return [t.id for t in d.targets]


def corpus(name: str) -> tuple[str, Detection]:
    path = CORPUS / name
    return path.read_text(), detect_file(str(path))


def test_model_file_modules_functions_nested_and_decorated():
    src, d = corpus("model.py")
    assert d.errors == []
    assert ids(d) == [
        "function:rotate_half",
        "function:apply_rotary",
        "function:rope_tables",
        "function:fused_bias_gelu",
        "module:RMSNorm",
        "module:Attention",
        "module:SwiGLU",
        "module:Block",
        "module:Block.ScaledResidual",
        "module:Transformer",
    ]  # not: Config (dataclass), init_weights (nn.init), Transformer.num_params
    rms = d.find("module:RMSNorm")
    assert (rms.start_line, rms.start_col, rms.end_line) == (53, 0, 64)
    assert text_at(src, rms).startswith("class RMSNorm(nn.Module):") and text_at(src, rms).endswith(
        "self.weight"
    )
    assert rms.ops == ["Tensor.mean", "Tensor.pow", "torch.rsqrt"]
    gelu = d.find("fused_bias_gelu")
    assert text_at(src, gelu).startswith(
        "@kernelevo.example(lambda:"
    )  # decorators belong to the range
    assert "torch.randn" not in gelu.ops  # ... but the example lambda is not what the function does
    nested = d.find("Block.ScaledResidual")
    assert (nested.name, nested.start_col) == ("ScaledResidual", 4)
    assert text_at(src, nested).startswith("class ScaledResidual(nn.Module):")


def test_aliases_helpers_and_submodules_resolve_to_torch_ops():
    _, d = corpus("model.py")
    attn = d.find("Attention").ops
    assert (
        "torch.nn.functional.scaled_dot_product_attention" in attn
    )  # import torch.nn.functional as F
    assert "torch.outer" in attn  # through rope_tables(), a helper function in the same file
    assert "Tensor.view" in attn  # through self._split(), a helper method
    assert "torch.nn.Linear" in attn  # self.qkv = nn.Linear(...) with `from torch import nn`
    block = d.find("Block").ops
    assert (
        "torch.rsqrt" in block and "torch.nn.functional.silu" in block
    )  # submodules defined in the file
    _, train = corpus("train.py")
    assert ids(train) == [
        "module:LabelSmoothingLoss"
    ]  # train() runs backward(): a training loop, not a target
    assert (
        "torch.nn.functional.log_softmax" in train.targets[0].ops
    )  # from torch.nn import functional as Fn


LIGER = (  # Liger's LigerRMSNorm: its forward applies an autograd Function imported from the package
    "import torch.nn as nn\n"
    "from liger_kernel.ops import LigerRMSNormFunction\n\n"
    "class LigerRMSNorm(nn.Module):\n"
    "    def forward(self, hidden_states):\n"
    "        return LigerRMSNormFunction.apply(hidden_states, self.weight, 1e-6)\n\n"
    "class Init(nn.Module):\n"
    "    def forward(self, fn):\n"
    "        return self.apply(fn)\n"
)
TIMM = (  # timm's RmsNorm2d: its forward calls `rms_norm2d` from its own package's .fast_norm
    "import torch.nn as nn\n"
    "from .fast_norm import rms_norm2d\n"
    "from ._builder import build_model_with_cfg\n\n"
    "class RmsNorm2d(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return rms_norm2d(x, self.normalized_shape, self.weight, self.eps)\n\n"
    "def resnet50(pretrained=False, **kwargs):\n"
    "    return build_model_with_cfg(RmsNorm2d, 'resnet50', pretrained, **kwargs)\n"
)


@pytest.mark.parametrize(
    ("src", "target", "ops"),
    [
        (LIGER, "module:LigerRMSNorm", ["liger_kernel.ops.LigerRMSNormFunction.apply"]),
        (TIMM, "module:RmsNorm2d", [".fast_norm.rms_norm2d"]),
    ],
    ids=["autograd-function-apply", "own-package-function"],
)
def test_a_module_whose_compute_lives_in_another_file_is_a_target(src, target, ops):
    """Both were missed; `self.apply(fn)` (nn.Module's) and a model factory calling the package's
    builder stay out."""
    d = detect_source(src, "norm.py")
    assert ids(d) == [target]
    assert d.find(target).ops == ops


def test_sequence_repetition_and_dtype_limits_are_not_tensor_arithmetic():
    """x-transformers' helpers `cast_tuple` and `max_neg_value` were flagged as targets."""
    src = (
        "import torch\n\n"
        "def cast_tuple(val, depth=1):\n    return val if isinstance(val, tuple) else (val,) * depth\n\n"
        "def rule(width):\n    return '-' * width\n\n"
        "def max_neg_value(tensor):\n    return -torch.finfo(tensor.dtype).max\n\n"
        "def scale(x, s):\n    return -x * s\n\n"
        "def masked(x, mask):\n    return x.masked_fill(mask, -torch.finfo(x.dtype).max)\n"
    )
    assert ids(detect_source(src, "helpers.py")) == ["function:scale", "function:masked"]


@pytest.mark.parametrize(
    "imports, call, op",
    [
        ("import torch as th", "th.softmax(x, -1)", "torch.softmax"),
        ("from torch.nn.functional import gelu as g", "g(x)", "torch.nn.functional.gelu"),
        ("from torch import softmax", "softmax(x, -1)", "torch.softmax"),
        ("import torch.nn.functional", "torch.nn.functional.relu(x)", "torch.nn.functional.relu"),
        ("import torch", "x @ x.T + torch.exp(x)", "torch.matmul"),
    ],
)
def test_import_forms(imports, call, op):
    d = detect_source(f"{imports}\n\n\ndef f(x):\n    return {call}\n", "f.py")
    assert ids(d) == ["function:f"] and op in d.targets[0].ops


def test_function_level_imports_and_lightning_style_modules():
    src = (
        "import lightning as L\n\n\nclass Head(L.LightningModule):\n    def forward(self, x):\n"
        "        import torch.nn.functional as F\n        return F.softmax(x, -1)\n"
    )
    d = detect_source(src, "h.py")
    assert ids(d) == ["module:Head"] and d.targets[0].ops == ["torch.nn.functional.softmax"]


def test_triton_kernels_and_launchers():
    src, d = corpus("triton_ops.py")
    assert ids(d) == [
        "triton_kernel:_add_kernel",
        "triton_launcher:add",
        "triton_kernel:_softmax_kernel",
        "triton_launcher:softmax",
        "triton_kernel:_rmsnorm_kernel",
        "triton_launcher:FusedRMSNorm.forward",
    ]
    softmax_kernel = d.find("triton_kernel:_softmax_kernel")
    assert text_at(src, softmax_kernel).startswith(
        "@triton.autotune("
    )  # stacked decorators, one kernel
    launcher = d.find("triton_launcher:FusedRMSNorm.forward")
    assert launcher.name == "FusedRMSNorm" and text_at(src, launcher).startswith(
        "def forward(self, x):"
    )


def test_load_inline_cuda_source():
    src, d = corpus("inline_cuda.py")
    assert ids(d) == ["cuda_inline:fused_bias_relu", "module:BiasReLU"]
    cu = d.find("cuda_inline:fused_bias_relu")
    text = text_at(src, cu)
    assert (
        text.startswith('r"""')
        and text.endswith('"""')
        and "__global__ void bias_relu_kernel" in text
    )


def test_cupy_rawkernel_and_pycuda_sourcemodule():
    src, d = corpus("cupy_kernels.py")
    assert ids(d) == ["cuda_inline:scale", "cuda_inline:saxpy"]
    assert "void scale(" in text_at(src, d.targets[0]) and "void saxpy(" in text_at(
        src, d.targets[1]
    )


def test_cu_file_next_to_launcher():
    cu_src, cu = corpus("ext/scale_kernel.cu")
    assert ids(cu) == ["cuda_file:row_scale_kernel"]
    text = text_at(cu_src, cu.targets[0])
    assert text.startswith(
        "template <typename T>\n__global__ void row_scale_kernel("
    ) and text.endswith("}\n}")
    _, py = corpus("ext/launcher.py")
    assert ids(py) == ["cuda_file:scale_kernel.cu"]


def test_syntax_error_reported_and_rest_still_found():
    _, d = corpus("broken.py")
    assert len(d.errors) == 1 and d.errors[0].startswith(str(CORPUS / "broken.py") + ":19: ")
    assert ids(d) == ["module:GatedMLP", "function:layer_scale", "module:Normalize"]


def test_syntax_error_inside_cuda_string_file_and_unclosed_bracket():
    src = (CORPUS / "inline_cuda.py").read_text().replace("def bias_relu(x", "def bias_relu(x, (")
    d = detect_source(src, "inline_cuda.py")
    assert d.errors and "cuda_inline:fused_bias_relu" in ids(d) and "module:BiasReLU" in ids(d)


def test_ids_survive_edits_elsewhere_and_ranges_shift():
    src, before = corpus("model.py")
    edited = src.replace(
        "ROPE_BASE = 10_000.0\n", "# a new comment\nimport os\n\n\nROPE_BASE = 10_000.0\n\n\n"
    )
    after = detect_source(edited, str(CORPUS / "model.py"))
    assert ids(after) == ids(before)
    for b, a in zip(before.targets, after.targets, strict=True):
        assert a.start_line == b.start_line + 6 and a.end_line == b.end_line + 6
        assert a.source_hash == b.source_hash
    rms_edit = src.replace("+ self.eps)", "+ self.eps * 2)")
    changed = detect_source(rms_edit, "model.py").find("module:RMSNorm")
    assert (
        changed.id == "module:RMSNorm"
        and changed.source_hash != before.find("module:RMSNorm").source_hash
    )


def test_duplicate_names_get_hash_suffixes():
    src = (
        "import torch\n\nif torch.cuda.is_available():\n    def act(x):\n        return torch.relu(x)\nelse:\n"
        "    def act(x):\n        return torch.tanh(x)\n"
    )
    got = ids(detect_source(src, "d.py"))
    assert len(got) == 2 and all(i.startswith("function:act@") for i in got) and got[0] != got[1]


def test_utf16_columns():
    src = 'import torch\nlabel = "😀"; f = None\ndef g(x): return torch.relu(x) if "é😀" else x\n'
    t = detect_source(src, "u.py").find("g")
    line = src.split("\n")[2]
    assert t.end_col == len(line) + 1  # the emoji is two UTF-16 code units
    assert text_at(src, t) == line


def test_files_without_torch_are_skipped_fast():
    d = detect_source("def f(x):\n    return x + 1\n" * 100, "plain.py")
    assert d.targets == [] and d.errors == []


def test_detection_imports_no_torch_or_triton():
    code = (
        "import sys, json, glob, pkgutil, importlib\nimport kernelevo.targets as pkg\n"
        "for m in pkgutil.iter_modules(pkg.__path__): importlib.import_module('kernelevo.targets.' + m.name)\n"
        "from kernelevo.targets.detect import detect_file\n"
        f"n = sum(len(detect_file(p).targets) for p in glob.glob({str(CORPUS)!r} + '/**/*.*', recursive=True))\n"
        "print(json.dumps([n, 'torch' in sys.modules, 'triton' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    n, torch_loaded, triton_loaded = json.loads(out)
    assert n > 20 and not torch_loaded and not triton_loaded


def test_detection_roundtrips_as_json():
    _, d = corpus("model.py")
    again = Detection.from_dict(json.loads(json.dumps(d.to_dict())))
    assert again == d and set(d.targets[0].to_dict()) == {
        "id",
        "kind",
        "name",
        "qualname",
        "path",
        "start_line",
        "start_col",
        "end_line",
        "end_col",
        "ops",
        "source_hash",
    }


def test_unreadable_file_reports_error(tmp_path):
    d = detect_file(str(tmp_path / "missing.py"))
    assert d.targets == [] and "cannot read" in d.errors[0]


def _edits(src: str) -> list[str]:
    lines = src.split("\n")
    mid = len(lines) // 2
    return [
        src,
        "# header comment\n\n" + src,  # everything shifts
        "\n".join(
            [*lines[:mid], "    x = 1  # typing here", *lines[mid:]]
        ),  # often a syntax or indentation slip
        src.replace(
            "import torch\n", "import torch\nimport torch.nn.functional as F2\n", 1
        ),  # aliases change
        src.replace(
            "(nn.Module)", "(object)", 1
        ),  # a base class changes: module-ness must be recomputed
        src,
    ]


@pytest.mark.parametrize(
    "name",
    [
        "model.py",
        "triton_ops.py",
        "inline_cuda.py",
        "cupy_kernels.py",
        "broken.py",
        "train.py",
        "ext/launcher.py",
    ],
)
def test_cached_detection_equals_full_analysis_across_edits(name):
    path = str(CORPUS / name)
    for text in _edits((CORPUS / name).read_text()):
        assert detect_source(text, path) == detect_source(text, path, cache=False)


def test_an_edit_reparses_only_its_statement(monkeypatch):
    from kernelevo.targets import chunks

    src = (CORPUS / "model.py").read_text()
    path = "/virtual/model.py"
    detect_source(src, path)
    parsed = []
    real = chunks._parse
    monkeypatch.setattr(chunks, "_parse", lambda text: parsed.append(text) or real(text))
    d = detect_source(src.replace("+ self.eps)", "+ self.eps * 1.0)"), path)
    assert len(parsed) == 1 and parsed[0].startswith("class RMSNorm(")
    assert d.find("module:RMSNorm").ops == ["Tensor.mean", "Tensor.pow", "torch.rsqrt"]


def test_cached_detection_equals_full_analysis_on_the_benchmark_file():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "detect_speed", Path(__file__).parents[1] / "bench" / "detect_speed.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    src = bench.make_file(2000)
    full = detect_source(src, "bench.py", cache=False)
    assert len(full.targets) > 100 and detect_source(src, "bench.py") == full
