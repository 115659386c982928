"""Kinds of targets real code has that detection once missed, and things it must not flag."""

from kernelevo.targets.detect import detect_source

TRITON = "import torch\nimport triton\nimport triton.language as tl\n\n\n"


def ids(source: str) -> list[str]:
    return [t.id for t in detect_source(source, "x.py", cache=False).targets]


def test_rotary_helpers_and_repeat_kv_written_with_operators_slicing_and_cat():
    src = (
        "import torch\n\n\ndef rotate_half(x):\n    x1 = x[..., : x.shape[-1] // 2]\n    x2 = x[..., "
        "x.shape[-1] // 2 :]\n"
        "    return torch.cat((-x2, x1), dim=-1)\n\n\n"
        "def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):\n    cos = cos.unsqueeze(unsqueeze_dim)\n"
        "    sin = sin.unsqueeze(unsqueeze_dim)\n    return (q * cos) + (rotate_half(q) * sin), (k * cos) + "
        "(rotate_half(k) * sin)\n\n\n"
        "def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:\n"
        "    batch, heads, slen, dim = hidden_states.shape\n"
        "    hidden_states = hidden_states[:, :, None, :, :].expand(batch, heads, n_rep, slen, dim)\n"
        "    return hidden_states.reshape(batch, heads * n_rep, slen, dim)\n\n\n"
        "def square(a):\n    return a * a\n"
    )
    assert ids(src) == [
        "function:rotate_half",
        "function:apply_rotary_pos_emb",
        "function:repeat_kv",
        "function:square",
    ]


def test_integer_helpers_schedules_loaders_and_harnesses_are_not_targets():
    src = (
        "import time\nimport torch\nimport triton\n\nthreads = 256\n\n\ndef cal_blocks(numel):\n"
        "    return (numel + threads - 1) // threads\n\n\ndef get_lr(it):\n    return 6e-4 * (it + 1) / 2000\n\n\n"
        "def batches(cfg: dict, batch: int):\n    while True:\n        t = torch.randint(0, 10, (batch, 9))\n"
        "        yield t[:, :-1] + 0, t[:, 1:]\n\n\n"
        "def time_it(fn, x):\n    start = torch.cuda.Event(enable_timing=True)\n    return fn(x) * 1\n\n\n"
        "def check(x):\n    torch.testing.assert_close(x * 2, x + x)\n\n\n"
        "@triton.testing.perf_report(triton.testing.Benchmark(x_names=['N'], x_vals=[1], line_arg='p', line_vals=[1],"
        " line_names=['a'], plot_name='p', args={}))\ndef benchmark(N, provider):\n    x = torch.randn(N)\n"
        "    return triton.testing.do_bench(lambda: torch.softmax(x, -1))\n"
    )
    assert ids(src) == []


def test_launches_through_variables_and_jit_by_assignment():
    src = TRITON + (
        "@triton.jit\ndef k_a(x_ptr, n, B: tl.constexpr):\n    tl.store(x_ptr + tl.arange(0, B), 1.0)\n\n\n"
        "@triton.jit\ndef k_b(x_ptr, n, B: tl.constexpr):\n    tl.store(x_ptr + tl.arange(0, B), 2.0)\n\n\n"
        "def plain(x_ptr, n, B: tl.constexpr):\n    tl.store(x_ptr + tl.arange(0, B), 3.0)\n\n\n"
        "k_c = triton.jit(plain)\n\n\n"
        "def warm(x):\n    kernel = k_a.warmup(x, x.numel(), B=64, grid=(1,))\n    kernel[(1, 1, 1)](x, "
        "x.numel(), 64)\n"
        "    return x\n\n\n"
        "def pick(x, fast: bool):\n    fx = k_a if fast else k_b\n    fx[(1,)](x, x.numel(), B=64)\n    return x\n\n\n"
        "def third(x):\n    k_c[(1,)](x, x.numel(), B=64)\n    return x\n"
    )
    assert ids(src) == [
        "triton_kernel:k_a",
        "triton_kernel:k_b",
        "triton_kernel:k_c",
        "triton_launcher:warm",
        "triton_launcher:pick",
        "triton_launcher:third",
    ]  # not plain(): k_c is its kernel


def test_device_helpers_called_only_from_kernels_are_not_launchable_kernels():
    src = TRITON + (
        "@triton.jit\ndef silu(x):\n    return x * tl.sigmoid(x)\n\n\n"
        "@triton.jit\ndef act_kernel(x_ptr, n, B: tl.constexpr):\n    offs = tl.arange(0, B)\n"
        "    tl.store(x_ptr + offs, silu(tl.load(x_ptr + offs)))\n\n\n"
        "def act(x):\n    act_kernel[(1,)](x, x.numel(), B=64)\n    return x\n"
    )
    assert ids(src) == ["triton_kernel:act_kernel", "triton_launcher:act"]


def test_classes_on_imported_bases_are_modules_when_they_define_forward():
    src = (
        "import torch\nfrom torch import nn\nfrom ...modeling_utils import PreTrainedModel\n"
        "from ...modeling_layers import GradientCheckpointingLayer\n\n\n"
        "class LlamaPreTrainedModel(PreTrainedModel):\n    base_model_prefix = 'model'\n\n\n"
        "class LlamaDecoderLayer(GradientCheckpointingLayer):\n    def forward(self, hidden_states):\n"
        "        return hidden_states + torch.tanh(hidden_states)\n\n\n"
        "class LlamaModel(LlamaPreTrainedModel):\n    def forward(self, input_ids):\n        return "
        "self.embed(input_ids) * 2\n\n\n"
        "class Op(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x.exp()\n"
    )
    assert ids(src) == ["module:LlamaDecoderLayer", "module:LlamaModel"]
