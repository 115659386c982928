"""Tasks from unedited code: inputs from the workspace, the __main__ block or the signature; config
objects as data; the user's package on sys.path; what the extractor copies; one task per file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kernelevo.targets.extract import ExtractError, build_task, check_task
from kernelevo.targets.init_args import task_init_args
from kernelevo.targets.model import Target
from kernelevo.targets.task_origin import reusable_task, task_origin, task_path_for

MODULE = (
    "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self, width: int):\n"
    "        super().__init__()\n        self.proj = nn.Linear(width, width)\n\n"
    "    def forward(self, x):\n        return torch.relu(self.proj(x))\n"
)


def workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def build(path: Path, key: str, out: Path, **kw):
    return build_task(str(path), key, out_dir=str(out), timeout=90, **kw)


def test_a_parameter_named_like_a_module_variable_does_not_pull_it_in(tmp_path):
    user = tmp_path / "tut.py"
    user.write_text(
        "import torch\n\nx = torch.randn(1823, 781, device='cuda')\nscale = 2.0\n\n\n"
        "# kernelevo: inputs = (torch.randn(4, 8),)\ndef double(x):\n    y = x * scale\n    return y\n\n\n"
        "y = double(x)\n"
    )
    text = build(user, "double", tmp_path / "t").text
    assert "device='cuda'" not in text and "y = double(x)" not in text
    assert "scale = 2.0" in text  # what the function really reads from the module still comes


def test_two_files_of_one_name_get_two_tasks(tmp_path):
    t = Target("module:Net", "module", "Net", "Net", "x", 0, 0, 1, 0)
    a = task_path_for(str(tmp_path), str(tmp_path / "a" / "model.py"), t)
    b = task_path_for(str(tmp_path), str(tmp_path / "b" / "model.py"), t)
    assert a != b and os.path.basename(a).startswith("model__Net__")


def test_header_records_the_origin_and_a_task_is_reused_until_the_code_changes(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    user = tmp_path / "m.py"
    user.write_text(
        "import torch\n\n\n# kernelevo: inputs = (torch.randn(4, 8),)\ndef f(x):\n    return torch.tanh(x)\n"
    )
    built = build_task(str(user), "f")
    origin = task_origin(built.path)
    assert origin["Source file"] == str(user) and origin["Target id"] == "function:f"
    assert origin["Inputs from"] == "comment" and origin["Source hash"] == built.target.source_hash
    assert reusable_task(str(user), "f") == (built.path, built.target)
    user.write_text(user.read_text().replace("tanh", "sigmoid"))
    assert reusable_task(str(user), "f") is None


def test_signature_guess_with_a_dataclass_config_saved_as_data(tmp_path):
    user = tmp_path / "gpt.py"
    user.write_text(
        "from dataclasses import dataclass\nimport torch\nfrom torch import nn\n\n\n@dataclass\nclass Cfg:\n"
        "    n_embd: int = 768\n    n_head: int = 12\n    dropout: float = 0.1\n\n\n"
        "class Attn(nn.Module):\n    def __init__(self, config: Cfg):\n        super().__init__()\n"
        "        assert config.n_embd % config.n_head == 0\n"
        "        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)\n        self.n_head = config.n_head\n\n"
        "    def forward(self, x):\n        q, k, v = self.qkv(x).chunk(3, dim=-1)\n"
        "        return torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v\n"
    )
    built = build(user, "Attn", tmp_path / "t")
    assert "guessed from the signature" in built.inputs
    text = Path(built.path).read_text()
    assert "_KERNELEVO_INIT_DATA" in text and "return [Cfg(**_kernelevo_saved()['0'])]" in text
    assert "class Cfg" in text and Path(built.path[:-3] + ".init.pt").exists()
    check = check_task(built.path, timeout=240)
    assert check.ok is True and "float32[2, 8, 64]" in check.message, check.message
    init = task_init_args(
        built.path, [str(tmp_path)]
    )  # what apply writes into the kernel and its test
    assert len(init) == 1 and repr(init[0]).startswith(
        "__import__('types').SimpleNamespace(**{'n_embd': 64"
    )


def test_the_sizes_of_a_modules_own_weights_are_guessed_first(tmp_path):
    """A module whose constructor defaults chose its size (`dim: int = 256`, a `(256,)` scale)
    got no task: no guessed shape ended in 256."""
    user = tmp_path / "block.py"
    user.write_text(
        "import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n"
        "    def __init__(self, dim: int = 256):\n        super().__init__()\n"
        "        self.scale = nn.Parameter(torch.ones(dim))\n\n"
        "    def forward(self, x):\n        return torch.relu(x) * self.scale\n"
    )
    built = build(user, "Block", tmp_path / "t")
    assert "guessed from the signature of Block.forward (small sizes; 1 tried)" in built.inputs
    check = check_task(built.path, timeout=240)
    assert check.ok is True and "float32[2, 8, 256]" in check.message, check.message


def test_a_loss_gets_class_indices_for_its_target_and_floats_before_token_ids(tmp_path):
    """Liger's losses guessed wrong: cross-entropy's `target` as floats of the logits' shape, and a
    divergence whose first argument must be 2-D as token ids (an int64 [2, 8] fitted before any
    2-D float did); a loss returning an integer was taken for a task."""
    user = tmp_path / "losses.py"
    user.write_text(
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
        "class CrossEntropy(nn.Module):\n    def forward(self, _input, target):\n"
        "        assert target.dtype == torch.int64, 'class indices'\n"
        "        return F.cross_entropy(_input, target)\n\n\n"
        "class Divergence(nn.Module):\n    def forward(self, log_q, log_p):\n"
        "        assert log_q.dim() == 2, 'flatten the batch first'\n"
        "        return (log_p.exp() * log_p).sum() - log_q.sum()\n"
    )
    ce = check_task(build(user, "CrossEntropy", tmp_path / "t").path, timeout=240)
    assert ce.ok is True and "inputs float32[2, 64], int64[2] -> output float32[]" in ce.message
    div = check_task(build(user, "Divergence", tmp_path / "t").path, timeout=240)
    assert div.ok is True and "inputs float32[2, 64], float32[2, 64]" in div.message, div.message


def test_constructor_arguments_of_the_comment_route_reach_apply(tmp_path):
    user = tmp_path / "norm.py"
    user.write_text(
        "import torch\nfrom torch import nn\n\n\n# kernelevo: inputs = (torch.randn(4, 32),)\n"
        "# kernelevo: init = (32,)\nclass Norm(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.ones(dim))\n\n    def forward(self, x):\n"
        "        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w\n"
    )
    built = build(user, "Norm", tmp_path / "t")
    assert task_init_args(built.path, [str(tmp_path)]) == [32]


def test_a_config_class_built_from_its_defaults_like_pretrained_config(tmp_path):
    user = tmp_path / "hf.py"
    user.write_text(
        "import torch\nfrom torch import nn\n\n\nclass LlamaConfig:\n"
        "    def __init__(self, hidden_size=4096, intermediate_size=11008, rms_norm_eps=1e-6, **kwargs):\n"
        "        self.hidden_size, self.intermediate_size = hidden_size, intermediate_size\n"
        "        self.rms_norm_eps = rms_norm_eps\n\n\n"
        "class LlamaMLP(nn.Module):\n    def __init__(self, config: LlamaConfig):\n        super().__init__()\n"
        "        self.up = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)\n"
        "        self.down = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)\n\n"
        "    def forward(self, x):\n        return self.down(torch.nn.functional.silu(self.up(x)))\n"
    )
    built = build(user, "LlamaMLP", tmp_path / "t")
    text = Path(built.path).read_text()
    assert "return [LlamaConfig(**_kernelevo_saved()['0'])]" in text and "class LlamaConfig" in text
    check = check_task(built.path, timeout=240)
    assert check.ok is True and "float32[2, 8, 64]" in check.message, (
        check.message
    )  # 4096 shrunk to 64


def test_cfgnode_style_config_becomes_a_namespace_of_what_the_module_read(tmp_path):
    user = tmp_path / "cfgnode.py"
    user.write_text(
        "import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n    def __init__(self, config):\n"
        "        super().__init__()\n        self.ln = nn.LayerNorm(config.n_embd)\n"
        "        self.drop = nn.Dropout(config.resid_pdrop)\n\n"
        "    def forward(self, x):\n        return self.drop(self.ln(x)) + x\n"
    )
    built = build(user, "Block", tmp_path / "t")
    text = Path(built.path).read_text()
    assert "types.SimpleNamespace(**_kernelevo_saved()['0'])" in text
    assert check_task(built.path, timeout=240).ok is True


def test_inputs_captured_from_a_workspace_script_and_from_a_test(tmp_path):
    ws = workspace(
        tmp_path,
        {
            "net.py": MODULE,
            "run.py": "import torch\nfrom net import Net\n\nif __name__ == '__main__':\n"
            "    print(Net(16)(torch.randn(4, 16)).shape)\n",
        },
    )
    built = build(ws / "net.py", "Net", ws / "t")
    assert "captured from run.py" in built.inputs
    assert "torch.randn((4, 16), dtype=torch.float32)" in built.text and "return [16]" in built.text
    (ws / "run.py").unlink()
    (ws / "tests").mkdir()
    (ws / "tests" / "test_net.py").write_text(
        "import sys, os\nsys.path.insert(0, os.path.dirname(os.path.dirname("
        "os.path.abspath(__file__))))\nimport torch\nfrom net import Net\n\n\n"
        "def test_net():\n    assert Net(12)(torch.randn(3, 12)).shape == (3, 12)\n"
    )
    built = build(ws / "net.py", "Net", ws / "t")
    assert "captured from tests/test_net.py" in built.inputs and "(3, 12)" in built.text


def test_inputs_captured_from_the_files_own_main_block(tmp_path):
    ws = workspace(
        tmp_path,
        {"net.py": MODULE + "\n\nif __name__ == '__main__':\n    Net(24)(torch.randn(5, 24))\n"},
    )
    built = build(ws / "net.py", "Net", ws / "t")
    assert "__main__ block of net.py" in built.inputs and "(5, 24)" in built.text


def test_a_file_inside_a_package_imports_it_from_the_workspace(tmp_path):
    ws = workspace(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/util.py": "import torch\n\n\ndef gate(x):\n    return torch.sigmoid(x)\n\nSCALE = 3.0\n",
            "pkg/model.py": "import torch\nfrom pkg.util import gate\nfrom .util import SCALE\n\n\n"
            "def fused(x):\n    return gate(x) * SCALE\n",
        },
    )
    built = build(ws / "pkg" / "model.py", "fused", ws / "t")
    assert f"sys.path root: {ws}" in built.text and "from pkg.util import SCALE" in built.text
    assert check_task(built.path, timeout=240).ok is True


def test_when_nothing_fits_every_source_says_why_in_one_line(tmp_path):
    user = tmp_path / "needs_gpu.py"
    user.write_text(
        "import torch\n\nDEVICE = torch.device('cuda')\nW = torch.ones(8, device=DEVICE)\n\n\n"
        "def scale(x):\n    return x * W\n"
    )
    with pytest.raises(ExtractError) as exc:
        build(user, "scale", tmp_path / "t")
    msg = str(exc.value)
    assert "\n" not in msg and "Tried without edits:" in msg and "has no __main__ block" in msg
    assert "failed on the CPU before any call" in msg


def test_sizes_of_real_use_get_a_small_copy_for_the_cpu_that_is_kept_only_if_it_runs(tmp_path):
    ws = workspace(
        tmp_path,
        {
            "norm.py": "import torch\nfrom torch import nn\n\n\n# kernelevo: inputs = (torch.randn(8, 4096),)\n"
            "# kernelevo: init = (4096,)\nclass Norm(nn.Module):\n    def __init__(self, dim):\n"
            "        super().__init__()\n        self.w = nn.Parameter(torch.ones(dim))\n\n"
            "    def forward(self, x):\n        return x * self.w\n\n\n"
            "# kernelevo: inputs = (torch.randn(8, 96),)\ndef heads(x):\n"
            "    return torch.softmax(x.view(8, 3, 32), -1)\n",
            "run.py": "import torch\nfrom norm import Norm\n\nif __name__ == '__main__':\n"
            "    Norm(3072)(torch.randn(2, 1000, 3072))\n",
        },
    )
    built = build(ws / "norm.py", "Norm", ws / "t")
    assert "SMALL = {'_KERNELEVO_N4096': 64}" in built.text
    assert "CPU sizes: small (4096->64)" in built.text and "CPU sizes small" in built.inputs
    assert built.small_check.ok is True and "float32[8, 64]" in built.small_check.message
    scripted = build(ws / "norm.py", "Norm", ws / "t2", script=str(ws / "run.py"))
    assert "torch.randn((2, _KERNELEVO_N1000, _KERNELEVO_N3072)" in scripted.text
    assert "return [_KERNELEVO_N3072]" in scripted.text  # the width and the input stay equal
    assert check_task(scripted.path, timeout=120).detail["small"] is True
    odd = build(ws / "norm.py", "heads", ws / "t3")  # 96 -> 48 breaks its view: sizes as given
    assert (
        "SMALL =" not in odd.text
        and "CPU sizes: as given (small sizes 96->48 did not run" in odd.text
    )
    assert check_task(odd.path, timeout=120).message.startswith("ran on cpu: inputs float32[8, 96]")


ANNOTATED = """import torch
from typing import Optional
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int, eps: float, norm: "RMSNorm", inner: nn.Module, cfg: Optional[Config]):
        super().__init__()

    def forward(self, x: torch.Tensor, scale: float, heads: int | None, table: dict):
        return x * scale
"""


def test_the_suggested_inputs_follow_the_annotations(tmp_path: Path) -> None:
    """gpt-fast's Attention(config: ModelArgs), unedited: the suggestion builds a ModelArgs, where
    `init=lambda: (1024,)` would fail inside the constructor with nothing to say why."""
    from kernelevo.targets.detect import analyze_source
    from kernelevo.targets.inputs import guess_inputs
    from kernelevo.targets.reference_call import resolve_reference

    def guess(path: Path, target_id: str):
        a = analyze_source(path.read_text(), str(path))
        target = next(t for t in a.targets if t.id == target_id)
        return guess_inputs(a, resolve_reference(a, target))

    g = guess(
        Path(__file__).parent / "corpus" / "public" / "gpt-fast" / "model.py", "module:Attention"
    )
    assert (g.init, g.init_params) == ("(ModelArgs(),)", ["config"])
    assert g.inputs == "(torch.randn(8, 1024), torch.randn(8, 1024), torch.randn(8, 1024))"
    (tmp_path / "block.py").write_text(ANNOTATED)
    g = guess(tmp_path / "block.py", "module:Block")
    assert g.init == "(1024, 1.0, RMSNorm(), torch.nn.Identity(), Config())"
    assert g.inputs == "(torch.randn(8, 1024), 1.0, 8, torch.randn(8, 1024))"


def test_a_torchscript_function_gets_inputs_from_the_function_it_was_scripted_from(tmp_path):
    """flash-attention's fused activations are `@torch.jit.script` functions: a ScriptFunction has
    no Python signature, so the guess failed with "no signature found" and no task was built."""
    user = tmp_path / "activations.py"
    user.write_text(
        "import torch\n\n\n@torch.jit.script\ndef bias_gelu(y, bias, scale: float):\n"
        "    x = bias + y\n    return x * torch.sigmoid(1.702 * x) * scale\n"
    )
    built = build(user, "bias_gelu", tmp_path / "t")
    assert "guessed from the signature of bias_gelu" in built.inputs, built.inputs
    assert "dtype=torch.float32), 0.5]" in Path(built.path).read_text()  # scale: float
    check = check_task(built.path, timeout=240)
    assert check.ok is True and "float32[2, 8, 64], float32[2, 8, 64]" in check.message, (
        check.message
    )


def test_a_convolution_module_gets_images_of_its_own_channels(tmp_path):
    """segment-anything's PatchEmbed (Conv2d(3, 768, 16, stride 16), then a permute): every generic
    guess had 16 or 64 channels, so no task was built."""
    user = tmp_path / "patch.py"
    user.write_text(
        "import torch\nfrom torch import nn\n\n\nclass PatchEmbed(nn.Module):\n"
        "    def __init__(self, in_chans: int = 3, embed_dim: int = 96):\n        super().__init__()\n"
        "        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=16, stride=16)\n\n"
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
        "        return self.proj(x).permute(0, 2, 3, 1)\n"
    )
    built = build(user, "PatchEmbed", tmp_path / "t")
    assert "guessed from the signature of PatchEmbed.forward (small sizes; 1 tried)" in built.inputs
    check = check_task(built.path, timeout=240)
    assert check.ok is True and "float32[2, 3, 32, 32]" in check.message, check.message


def test_rotary_tables_get_their_own_shape_beside_x(tmp_path):
    """nanochat's apply_rotary_emb(x, cos, sin), unedited: x (B, T, H, D) and tables that
    broadcast as (1, T, 1, D/2); every generic guess gave the three one shape."""
    corpus = Path(__file__).parent / "corpus" / "public" / "nanochat"
    shutil.copytree(corpus, tmp_path / "nanochat")
    built = build(tmp_path / "nanochat" / "nanochat" / "gpt.py", "apply_rotary_emb", tmp_path / "t")
    check = check_task(built.path, timeout=240)
    assert check.ok is True, check.message
    assert "float32[2, 16, 4, 64], float32[1, 16, 1, 32], float32[1, 16, 1, 32]" in check.message


def test_a_freqs_table_gets_a_shape_of_its_own_beside_x(tmp_path):
    """gpt-fast's apply_rotary_emb(x, freqs_cis), unedited: the table is viewed as
    (1, T, 1, D/2, 2) against x (B, T, H, D)."""
    shutil.copytree(Path(__file__).parent / "corpus" / "public" / "gpt-fast", tmp_path / "gpt-fast")
    built = build(tmp_path / "gpt-fast" / "model.py", "apply_rotary_emb", tmp_path / "t")
    check = check_task(built.path, timeout=240)
    assert check.ok is True and "float32[2, 16, 4, 64]" in check.message, check.message


def test_a_function_transformers_wrapped_as_a_hub_kernel_module(tmp_path):
    """transformers' apply_rotary_pos_emb, as installed: `@use_kernel_forward_from_hub` makes it a
    module whose forward takes (*args, **kwargs), so no parameter was seen and no task built; and
    of the rotary conventions tried, one that broadcast the outputs to five dimensions was taken."""
    import transformers.models.llama.modeling_llama as llama

    built = build(Path(llama.__file__), "apply_rotary_pos_emb", tmp_path / "t")
    check = check_task(built.path, timeout=240)
    assert check.ok is True, check.message
    outputs = check.message.split("-> output ", 1)[1]
    assert outputs.count("[") == 2 and outputs.count(",") == 7, outputs  # two 4-d tensors
