"""Recording a target's call from a script, as Hugging Face layers are called: a config object
whose to_dict() leaves out what the model set on it later, a live cache object, keyword
arguments, and a (cos, sin) pair as one argument (targets/capture_child.py,
targets/capture_defaults.py); then the task verified with a candidate, which sends that config
and that pair across processes (tensor_channel.py, judge/candidate_exchange.py)."""

import json
import textwrap

import pytest
from support import run_kernelevo

from kernelevo.targets.extract import ExtractError, build_task, check_task
from kernelevo.task import load_task_module

LAYER = textwrap.dedent(
    """
    import torch
    from torch import nn


    class LayerConfig:
        def __init__(self, hidden=64, id2label=None, **kwargs):
            self.hidden = hidden
            self.id2label = id2label or {0: "no", 1: "yes"}
            self._impl = None
            for k, v in kwargs.items():
                setattr(self, k, v)

        def to_dict(self):
            return {k: v for k, v in vars(self).items() if not k.startswith("_")}


    class KVCache:
        def __init__(self):
            self.keys = []

        def update(self, k):
            self.keys.append(k)
            return torch.cat(self.keys, dim=1)


    class Layer(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.gated = config._impl == "gated"
            self.proj = nn.Linear(config.hidden, config.hidden)

        def forward(self, x, pe, cache=None, **kwargs):
            k = self.proj(x)
            if cache is not None:
                k = cache.update(k)
            cos, sin = pe
            out = k * cos + x * sin
            return out * kwargs.get("scale", 1.0)
    """
)


def script(extra_kwargs: str) -> str:
    return textwrap.dedent(
        f"""
        import torch
        from layer import Layer, LayerConfig

        config = LayerConfig(hidden=64)
        config._impl = "gated"  # what a model sets on its config after construction
        layer = Layer(config)
        x = torch.randn(2, 16, 64)
        pe = (torch.randn(1, 16, 64), torch.randn(1, 16, 64))
        layer(x, pe, cache=KVCache(), {extra_kwargs})
        """
    ).replace(
        "from layer import Layer, LayerConfig", "from layer import KVCache, Layer, LayerConfig"
    )


def build(tmp_path, extra_kwargs: str):
    (tmp_path / "layer.py").write_text(LAYER)
    (tmp_path / "run.py").write_text(script(extra_kwargs))
    return build_task(
        str(tmp_path / "layer.py"),
        "Layer",
        script=str(tmp_path / "run.py"),
        out_dir=str(tmp_path / "t"),
    )


def built_from(tmp_path, module: str, source: str, target: str, script: str):
    """The task of `target` in `module`.py, with inputs recorded while `script` runs."""
    (tmp_path / f"{module}.py").write_text(source)
    (tmp_path / "run.py").write_text(script)
    return build_task(
        str(tmp_path / f"{module}.py"),
        target,
        script=str(tmp_path / "run.py"),
        out_dir=str(tmp_path / "t"),
    )


def test_what_the_task_cannot_pass_is_left_out_only_where_a_second_call_agrees(tmp_path):
    built = build(tmp_path, "use_cache=True")
    assert (
        "cache (a KVCache) left at its default None and keyword arguments use_cache not passed: "
        "a second call gave the same outputs" in built.inputs
    )
    assert check_task(built.path).ok is True
    task = load_task_module(built.path)
    config = task.get_init_inputs()[0]
    assert type(config).__name__ == "LayerConfig" and config.hidden == 64
    assert vars(config)["_impl"] == "gated"  # set after construction, restored
    assert task.Model(*task.get_init_inputs()).gated
    args = task.get_inputs()
    assert args[2] is None and isinstance(args[1], tuple) and len(args[1]) == 2
    assert "pe = tuple of (float32[1, 16, 64] on cpu (contiguous), float32[1, 16, 64]" in built.text


def test_a_plain_keyword_that_changes_the_outputs_is_passed_by_the_task(tmp_path):
    """`layer(x, pe, scale=2.0)`: the task's Model passes scale=2.0 as the call did, so the task
    computes what the user's code computed (it was refused: a positional call cannot pass it)."""
    built = build(tmp_path, "scale=2.0")
    assert "keyword arguments scale=2.0 passed as the recorded call passed them" in built.inputs
    assert check_task(built.path).ok is True
    task = load_task_module(built.path)
    torch = pytest.importorskip("torch")
    model = task.Model(*task.get_init_inputs())
    args = task.get_inputs()
    plain = task.Layer.__mro__[0]  # the user's class, its forward replaced on Model alone
    assert plain is task.Model
    expected = task._kernelevo_forward(model, *args, scale=2.0)
    torch.testing.assert_close(model(*args), expected)
    unscaled = task._kernelevo_forward(model, *args)
    torch.testing.assert_close(model(*args), unscaled * 2.0)


def test_a_tensor_keyword_that_changes_the_outputs_is_refused_with_the_reason(tmp_path):
    with pytest.raises(ExtractError) as err:
        build(tmp_path, "scale=torch.full((64,), 2.0)")
    assert "keyword arguments scale (a tensor float32[64])" in str(err.value)
    assert "without them the outputs differ" in str(err.value)


def test_a_function_called_with_a_plain_keyword_gets_it_in_its_task(tmp_path):
    built = built_from(
        tmp_path,
        "ops",
        "import torch\n\n\ndef act(x, *, slope=0.01):\n"
        "    return torch.nn.functional.leaky_relu(x, slope)\n",
        "act",
        "import torch\nfrom ops import act\n\nact(torch.randn(8, 64), slope=0.2)\n",
    )
    assert "return act(x, slope=0.2)" in built.text
    assert check_task(built.path).ok is True


CANDIDATE = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl
    from torch import nn


    @triton.jit
    def _rotate(k_ptr, x_ptr, cos_ptr, sin_ptr, out_ptr, n, period, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        k = tl.load(k_ptr + offs, mask=mask)
        x = tl.load(x_ptr + offs, mask=mask)
        cos = tl.load(cos_ptr + offs % period, mask=mask)
        sin = tl.load(sin_ptr + offs % period, mask=mask)
        tl.store(out_ptr + offs, k * cos + x * sin, mask=mask)


    class ModelNew(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.proj = nn.Linear(config.hidden, config.hidden)

        def forward(self, x, pe, cache=None, use_cache=None):
            k = self.proj(x).contiguous()
            x = x.contiguous()
            cos, sin = pe[0].contiguous(), pe[1].contiguous()
            out = torch.empty_like(x)
            n = x.numel()
            _rotate[(triton.cdiv(n, 1024),)](k, x, cos, sin, out, n, cos.numel(), BLOCK=1024)
            return out
    """
)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_the_recorded_task_verifies_a_candidate_across_processes(tmp_path, device):
    """The config (its id2label has int keys) and the (cos, sin) pair reach the candidate; the pair
    is refilled with the first set's new values like any other input (it was not: the refilled run
    saw the old pair and a correct kernel was reported incorrect). On a GPU the pair crosses by
    CUDA IPC, as copies: the judge's own tensors inside it were exported as they were."""
    built = build(tmp_path, "use_cache=True")
    cand = tmp_path / "cand.py"
    cand.write_text(CANDIDATE)
    r = run_kernelevo(
        ["verify", built.path, str(cand), "--json", "--service", "off", "--device", device],
        tmp_path,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["status"] == "verified", verdict["reason"]
    assert any(c["name"] == "same_buffers_new_values" and c["passed"] for c in verdict["checks"])


def test_the_second_call_draws_the_same_random_numbers(tmp_path):
    """Dropout in training mode: the outputs agree only from the same random state."""
    built = built_from(
        tmp_path,
        "drop",
        "import torch\nfrom torch import nn\n\n\nclass Drop(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.p = nn.Dropout(0.5)\n\n"
        "    def forward(self, x, **kwargs):\n        return self.p(x) * 2\n",
        "Drop",
        "import torch\nfrom drop import Drop\n\nDrop().train()(torch.randn(8, 64), step=3)\n",
    )
    assert "keyword arguments step not passed: a second call gave the same outputs" in built.inputs


def test_returned_objects_of_one_class_compare_by_their_attributes():
    """A model's output holding a fresh KV cache object each call: the second call without a
    keyword that does not matter gave 'the outputs differ' only because two cache objects were
    never equal (Hugging Face's MixtralModel was refused so)."""
    torch = pytest.importorskip("torch")
    from kernelevo.targets.capture_defaults import same_outputs

    class Layer:
        def __init__(self, keys):
            self.keys, self.kind, self.device = keys, Layer, torch.device("cpu")

    class Cache:
        def __init__(self, keys):
            self.layers = [Layer(keys)]

    k = torch.randn(2, 4)
    assert same_outputs((k, Cache(k)), (k.clone(), Cache(k.clone())), torch)
    assert not same_outputs((k, Cache(k)), (k, Cache(k + 1)), torch)
    assert not same_outputs(Cache(k), Layer(k), torch)


def test_what_was_left_out_names_its_class_with_the_right_article():
    from kernelevo.targets.captured_inputs import _left_out

    left = _left_out({"replaced": [["cache", "EncoderDecoderCache", "None"]]})
    assert "cache (an EncoderDecoderCache) left at its default None" in left
    left = _left_out({"replaced": [["cache", "DynamicCache", "None"]]})
    assert "cache (a DynamicCache) left at its default None" in left


def test_token_ids_that_do_not_reach_the_vocabulary_stay_below_its_small_size(tmp_path):
    """Ids drawn from a vocabulary of 500 whose largest is 496: the task drew them below 497 at
    the small sizes too, past the embedding scaled to 37 rows, and kept no small sizes (seen on
    Hugging Face's Gemma embedding, depending on the draw)."""
    built = built_from(
        tmp_path,
        "emb",
        "import torch\nfrom torch import nn\n\n\nclass Emb(nn.Module):\n"
        "    def __init__(self, vocab, dim):\n        super().__init__()\n"
        "        self.e = nn.Embedding(vocab, dim)\n\n"
        "    def forward(self, ids):\n        return self.e(ids) * 2.0\n",
        "Emb",
        "import torch\nfrom emb import Emb\n\nids = torch.randint(0, 497, (2, 32))\n"
        "ids[0, 0] = 496\nEmb(500, 128)(ids)\n",
    )
    assert "min(497, _KERNELEVO_N500)" in built.text
    assert "did not run" not in built.text, built.text
    assert check_task(built.path).ok is True
    task = load_task_module(built.path)
    assert int(task.get_inputs()[0].max()) < 497
