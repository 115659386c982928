"""Building KernelBench-format tasks from targets in the corpus, and checking they run (child processes)."""

import os
from pathlib import Path

import pytest

from kernelevo.targets.extract import ExtractError, build_task, check_task
from kernelevo.task import read_task

CORPUS = Path(__file__).parent / "corpus" / "usercode"


def build(name: str, key: str, tmp_path, **kw):
    return build_task(str(CORPUS / name), key, out_dir=str(tmp_path), **kw)


def test_decorator_inputs_function_target_with_constants(tmp_path):
    task = build("model.py", "fused_bias_gelu", tmp_path)
    assert os.path.dirname(task.path) == str(tmp_path)
    assert os.path.basename(task.path).startswith("model__fused_bias_gelu__")
    text = Path(task.path).read_text()
    assert (
        "GELU_C = math.sqrt(2.0 / math.pi)" in text and "import math" in text
    )  # constants and their imports
    code = text.split('"""', 2)[2]
    assert (
        "@kernelevo" not in code and "import kernelevo" not in code
    )  # the task does not need KernelEvo
    assert "class Model(torch.nn.Module)" in text and "return fused_bias_gelu(x, bias)" in text
    assert "RMSNorm" not in text and "Transformer" not in text  # only what the target needs
    read_task(task.path)
    check = check_task(task.path)
    assert check.ok is True, check.message
    # the decorator's 256 is a size of real use: the CPU verifies a small copy (FORMATS.md)
    assert "_KERNELEVO_N256 = 256" in text and "SMALL = {'_KERNELEVO_N256': 64}" in text
    assert "float32[8, 64], float32[64] -> output float32[8, 64]" in check.message


def test_comment_inputs_module_target(tmp_path):
    task = build("model.py", "SwiGLU", tmp_path)
    assert task.inputs.startswith("`# kernelevo:` comments")
    text = task.text
    assert "class Model(nn.Module):" in text and "SwiGLU = Model" in text
    assert "import torch.nn.functional as F" in text and "from torch import nn" in text
    assert "return _kernelevo_list((64, 4))" in text


def test_helpers_methods_and_future_import_come_along(tmp_path):
    (tmp_path / "work").mkdir()
    src = (
        (CORPUS / "model.py")
        .read_text()
        .replace(
            "class Attention(nn.Module):",
            "# kernelevo: inputs = (torch.randn(2, 8, 64),)\n# kernelevo: init = (Config(),)\nclass "
            "Attention(nn.Module):",
        )
    )
    user = tmp_path / "work" / "model.py"
    user.write_text(src)
    task = build_task(str(user), "Attention", out_dir=str(tmp_path))
    text = task.text
    assert text.index("from __future__ import annotations") < text.index("import torch")
    for needed in (
        "def rope_tables(",
        "def apply_rotary(",
        "def rotate_half(",
        "ROPE_BASE = ",
        "class Config:",
        "from dataclasses import dataclass",
        "def _split(self",
    ):
        assert needed in text
    assert "class Block" not in text and "GELU_C" not in text
    check = check_task(task.path)
    assert check.ok is True, check.message


def test_kernelbench_style_file_uses_its_get_inputs_and_small(tmp_path):
    task = build("kernelbench_style.py", "Model", tmp_path)
    assert task.inputs.startswith("get_inputs()")
    assert 'SMALL = {"batch_size": 4, "dim": 96}' in task.text and "batch_size = 16" in task.text
    assert read_task(task.path).hints.get("SMALL")
    check = check_task(task.path)
    assert check.ok is True and "SMALL sizes" in check.message and "float32[4, 96]" in check.message


def test_triton_kernel_reference_is_its_launcher(tmp_path):
    task = build("triton_ops.py", "_add_kernel", tmp_path)
    assert task.reference == "add" and task.target.id == "triton_kernel:_add_kernel"
    assert "@triton.jit\ndef _add_kernel(" in task.text and "return add(x, y)" in task.text
    assert "_softmax_kernel" not in task.text
    check = check_task(task.path)  # runs the existing kernel under the Triton interpreter
    assert check.ok is True, check.message


def test_launcher_inputs_guessed_from_the_signature_and_checked(tmp_path):
    task = build("triton_ops.py", "_rmsnorm_kernel", tmp_path)
    assert "guessed from the signature" in task.inputs
    text = Path(task.path).read_text()
    assert (
        "def get_init_inputs():\n    return [64]" in text
    )  # FusedRMSNorm(dim): a small size, by name
    check = check_task(task.path, timeout=240)
    assert check.ok is True, check.message


def test_missing_inputs_message_lists_what_was_tried(tmp_path):
    user = tmp_path / "wrapped.py"
    user.write_text(
        "import torch\nfrom torch import nn\n\n\nclass Wrapped(nn.Module):\n"
        "    def __init__(self, inner: nn.Module):\n        super().__init__()\n        self.inner = inner\n\n"
        "    def forward(self, x):\n        return torch.relu(self.inner(x))\n"
    )
    with pytest.raises(ExtractError) as exc:
        build_task(str(user), "Wrapped", out_dir=str(tmp_path / "tasks"), timeout=60)
    msg = str(exc.value)
    assert "wrapped.py:5: no example inputs for Wrapped" in msg
    # the constructor's `inner: nn.Module` gets a module that runs, not a number
    assert (
        "@kernelevo.example(lambda: (torch.randn(8, 1024),), init=lambda: (torch.nn.Identity(),))"
        in msg
    )
    assert "Tried without edits:" in msg and "has no __main__ block" in msg
    assert "constructor argument 'inner' is a Module" in msg and "\n" not in msg


def test_cuda_targets_resolve_to_python_launchers(tmp_path):
    for name, key, ref in [
        ("inline_cuda.py", "fused_bias_relu", "bias_relu"),
        ("cupy_kernels.py", "scale", "scale"),
        ("ext/scale_kernel.cu", "row_scale_kernel", "row_scale"),
    ]:
        # cupy_kernels.py imports cupy at the top: where it is not installed, that is the reason
        missing = rf"|{ref} cannot run here: its file imports cupy, which is not installed"
        with pytest.raises(ExtractError, match=rf"no example inputs for {ref}\b{missing}"):
            build(name, key, tmp_path)
    with pytest.raises(
        ExtractError, match=r"no function or nn\.Module in cupy_kernels\.py uses saxpy_mod"
    ):
        build("cupy_kernels.py", "saxpy", tmp_path)


def test_cuda_inline_task_is_written_but_not_run_without_gpu(tmp_path):
    src = (
        (CORPUS / "inline_cuda.py")
        .read_text()
        .replace(
            "def bias_relu(",
            "# kernelevo: inputs = (torch.randn(64, 256), torch.randn(256))\ndef bias_relu(",
        )
    )
    user = tmp_path / "inline_cuda.py"
    user.write_text(src)
    task = build_task(str(user), "cuda_inline:fused_bias_relu", out_dir=str(tmp_path / "tasks"))
    for needed in (
        'CUDA_SRC = r"""',
        "CPP_SRC = ",
        "_ext = None",
        "def _load():",
        "load_inline(",
        "from torch.utils.cpp_extension import load_inline",
    ):
        assert needed in task.text
    check = check_task(task.path)
    assert check.ok is None and "CUDA GPU" in check.message


def test_inputs_captured_from_a_training_script(tmp_path):
    task = build("model.py", "RMSNorm", tmp_path, script=str(CORPUS / "train.py"))
    assert task.inputs.startswith("captured while running")
    assert "x float32[4, 32, 64] on cpu (contiguous)" in task.text
    assert "return [torch.randn((4, 32, 64), dtype=torch.float32)]" in task.text
    assert "return [64, 1e-06]" in task.text
    loss = build("train.py", "LabelSmoothingLoss", tmp_path, script=str(CORPUS / "train.py"))
    assert (
        "torch.randint(" in loss.text and "dtype=torch.int64" in loss.text
    )  # token ids keep their range
    assert check_task(loss.path).ok is True


def test_captured_constructor_objects(tmp_path):
    task = build("model.py", "Attention", tmp_path, script=str(CORPUS / "train.py"))
    assert (
        "return [Config(dim=64, n_heads=4, n_layers=2, hidden_mult=4, vocab=_KERNELEVO_N256, "
        "max_seq=_KERNELEVO_N128)]" in task.text
    )
    with pytest.raises(
        ExtractError, match="constructor argument 'fn' is an object of type Attention"
    ):
        build("model.py", "Block.ScaledResidual", tmp_path, script=str(CORPUS / "train.py"))


def test_script_that_never_calls_the_target(tmp_path):
    script = tmp_path / "noop.py"
    script.write_text("print('hello')\n")
    with pytest.raises(ExtractError, match=r"without calling RMSNorm\.forward"):
        build("model.py", "RMSNorm", tmp_path, script=str(script))


def test_unknown_target_lists_what_exists(tmp_path):
    with pytest.raises(
        ExtractError,
        match="no target 'Nope'; targets here: rotate_half, apply_rotary, rope_tables, fused_bias_gelu",
    ):
        build("model.py", "Nope", tmp_path)


def checked_function(tmp_path, file: str, name: str, shape: str, body: str):
    """The task check of a one-line function `name(x)` of a file written here, with its inputs."""
    user = tmp_path / file
    user.write_text(
        f"import torch\n\n\n# kernelevo: inputs = (torch.randn({shape}),)\ndef {name}(x):\n"
        f"    {body}\n"
    )
    return check_task(build_task(str(user), name, out_dir=str(tmp_path / "t")).path)


def test_failing_reference_is_reported_with_location(tmp_path):
    check = checked_function(tmp_path, "bad.py", "f", "4, 5", "return torch.mm(x, x)")
    assert check.ok is False and "bad__f__" in check.message and "RuntimeError" in check.message


def test_check_has_a_time_limit(tmp_path):
    user = tmp_path / "slow.py"
    user.write_text(
        "import time\nimport torch\n\n\n# kernelevo: inputs = (torch.randn(4),)\ndef f(x):\n"
        "    time.sleep(60)\n    return torch.relu(x)\n"
    )
    task = build_task(str(user), "f", out_dir=str(tmp_path / "t"))
    check = check_task(task.path, timeout=8)
    assert check.ok is False and "did not finish within 8 s" in check.message


def test_a_precision_comment_makes_the_task_accept_tf32(tmp_path):
    """`# kernelevo: precision = tf32` above a target (what the editor's "Accept TF32" writes)
    gives its task ALLOW_TF32, which the judge reads for the check and the baselines."""
    src = (
        "import torch\n\n\n"
        "# kernelevo: precision = tf32\n"
        "# kernelevo: inputs = (torch.randn(16, 32), torch.randn(32, 8))\n"
        "def project(x, w):\n    return torch.relu(x @ w)\n\n\n"
        "# kernelevo: inputs = (torch.randn(4, 8),)\n"
        "def plain(x):\n    return x * 2\n"
    )
    user = tmp_path / "proj.py"
    user.write_text(src)
    accepted = build_task(str(user), "project", out_dir=str(tmp_path / "t"))
    assert "ALLOW_TF32 = True" in accepted.text
    assert read_task(accepted.path).hints.get("ALLOW_TF32") is True
    other = build_task(str(user), "plain", out_dir=str(tmp_path / "t"))
    assert "ALLOW_TF32" not in other.text


def test_a_reference_returning_a_dict_of_outputs(tmp_path):
    """Hugging Face's encoders return a ModelOutput (a dict of tensors): its tensors are the outputs;
    a dict without any says what to pick (the check had said only 'not tensors')."""
    body = "return {'last_hidden_state': torch.tanh(x)}"
    check = checked_function(tmp_path, "enc.py", "encode", "4, 8", body)
    assert check.ok is True, check.message
    body = "return {'n': float(torch.tanh(x).sum())}"
    check = checked_function(tmp_path, "total.py", "total", "4, 8", body)
    assert check.ok is False
    assert "forward returned dict (a dict of outputs), not tensors" in check.message
    assert "optimize a layer inside it" in check.message


def test_the_check_names_a_weight_never_initialized(tmp_path):
    """A layer whose weight the enclosing model fills (torch.empty standing alone) gives NaN; the
    check had said only 'output has NaN or Inf', which reads as a broken reference."""
    task = tmp_path / "unset.py"
    task.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.experts = nn.Parameter(torch.empty(4, 4).fill_(float('nan')))\n\n"
        "    def forward(self, x):\n        return x @ self.experts\n\n\n"
        "def get_inputs():\n    return [torch.randn(2, 4)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    check = check_task(str(task))
    assert check.ok is True, check.message
    assert any("weight experts was never initialized" in w for w in check.detail["warnings"])


def test_a_package_the_file_imports_and_this_environment_lacks_is_the_reason(tmp_path):
    """Liger-Kernel's geglu.py got "no example inputs ...; add @kernelevo.example(...)", advice
    that cannot work, with the missing liger_kernel named at the end of a long line."""
    user = tmp_path / "fused.py"
    user.write_text(
        "import torch\n\nfrom kernelevo_absent_pkg.ops import settings\n\n\n"
        "def fused(a, b):\n    return settings.scale * a * torch.sigmoid(b)\n"
    )
    with pytest.raises(ExtractError) as caught:
        build_task(str(user), "function:fused", out_dir=str(tmp_path / "tasks"))
    assert str(caught.value) == (
        f"{user}:3: fused cannot run here: its file imports kernelevo_absent_pkg, which is not "
        "installed in this environment; install it, or put its checkout on PYTHONPATH "
        "(ModuleNotFoundError: No module named 'kernelevo_absent_pkg')"
    )


def test_the_users_own_package_is_found_through_folders_without_an_init(tmp_path):
    """flux's src/flux/modules/layers.py, unedited (tests/corpus/public; no modules/__init__.py)
    imports `flux.math`: the task said flux was not installed, where its own checkout holds it
    two folders up."""
    import shutil

    shutil.copytree(Path(__file__).parent / "corpus" / "public" / "flux", tmp_path / "flux")
    user = tmp_path / "flux" / "src" / "flux" / "modules" / "layers.py"
    task = build_task(str(user), "module:SingleStreamBlock", out_dir=str(tmp_path / "tasks"))
    assert f"sys.path.insert(0, {str(tmp_path / 'flux' / 'src')!r})" in task.text
    assert "from flux.math import attention, rope" in task.text
    check = check_task(task.path)
    assert check.ok is True, check.message
