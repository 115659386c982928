"""Real code nobody here wrote: Hugging Face transformers' Llama layers, as installed, called from
a user's script that builds a small model. Its layers take a config whose to_dict() leaves out
what the model set on it (the attention implementation), a live KV cache, keyword arguments and
a (cos, sin) pair; each was found refused ('cannot be rebuilt from a recording') or wrongly
judged before these tests."""

import json
import textwrap

import pytest
from support import run_kernelevo

from kernelevo.targets.extract import build_task, check_task

# installed by `make test` (the dev extra); a machine without it (the GPU image) skips this file
modeling_llama = pytest.importorskip("transformers.models.llama.modeling_llama")
LLAMA = modeling_llama.__file__

SCRIPT = textwrap.dedent(
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=8,
        num_key_value_heads=4, vocab_size=1000, max_position_embeddings=512,
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        print(model(torch.randint(0, 1000, (2, 64))).logits.shape)
    """
)


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llama")
    path = folder / "run_llama.py"
    path.write_text(SCRIPT)
    return path


@pytest.mark.parametrize(
    "target, said",
    [
        ("LlamaRMSNorm", ""),
        ("apply_rotary_pos_emb", ""),
        ("LlamaMLP", ""),
        ("LlamaAttention", "cache (a DynamicCache) left at its default None"),
        ("LlamaDecoderLayer", "cache (a DynamicCache) left at its default None"),
    ],
)
def test_llama_layers_become_tasks_from_a_users_script(script, tmp_path, target, said):
    built = build_task(LLAMA, target, script=str(script), out_dir=str(tmp_path))
    assert built.inputs.startswith(f"captured while running {script}"), built.inputs
    assert said in built.inputs
    check = check_task(built.path)
    assert check.ok is True, check.message
    if target in ("LlamaAttention", "LlamaDecoderLayer"):  # the model's choice of attention kept
        assert "_kernelevo_config(LlamaConfig, '0')" in built.text


@pytest.mark.slow
def test_a_llama_decoder_layer_gets_a_verified_offline_kernel_on_the_cpu(script, tmp_path):
    """Inductor's kernels around the library matmuls and attention, extracted and verified across
    the sandboxed processes (the config with its int-keyed id2label and the (cos, sin) pair cross)."""
    out = tmp_path / "run.json"
    r = run_kernelevo(
        [
            "optimize",
            f"{LLAMA}::LlamaDecoderLayer",
            "--script",
            str(script),
            "--json-out",
            str(out),
        ],
        tmp_path,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    summary = json.loads(out.read_text())
    assert summary["candidates"].get("verified", 0) >= 1, summary


def test_the_whole_llama_model_is_called_by_name_and_says_why_its_cache_cannot_be_compared(
    script, tmp_path
):
    """LlamaModel's decorated forward adds use_cache as a keyword, so the task's positional call
    raised 'got multiple values for argument use_cache'; the task now passes its inputs by name.
    Its output then holds a DynamicCache: the check says so and how to call it instead."""
    built = build_task(LLAMA, "LlamaModel", script=str(script), out_dir=str(tmp_path / "a"))
    assert "Model.forward = _kernelevo_forward_as_called" in built.text
    check = check_task(built.path)
    assert check.ok is False and "is a DynamicCache" in check.message, check.message
    assert "use_cache=False" in check.message

    without_cache = script.parent / "run_llama_no_cache.py"
    without_cache.write_text(
        SCRIPT.replace("(2, 64)))", "(2, 64)), use_cache=False)").replace(".logits.shape", "")
    )
    built = build_task(LLAMA, "LlamaModel", script=str(without_cache), out_dir=str(tmp_path / "b"))
    check = check_task(built.path)
    assert check.ok is True, check.message


@pytest.mark.slow
@pytest.mark.parametrize("target", ["LlamaRotaryEmbedding", "LlamaModel"])
def test_the_rotary_embedding_and_the_whole_model_get_a_verified_offline_kernel(
    script, tmp_path, target
):
    """Both own a buffer their state_dict leaves out (inv_freq, persistent=False), and the whole
    model returns a ModelOutput dict: the Inductor extraction refused both, so the offline search
    offered nothing for them."""
    no_cache = tmp_path / "run_llama_no_cache.py"
    no_cache.write_text(  # one decoder layer: the whole model's kernels are interpreted on the CPU
        SCRIPT.replace("(2, 64)))", "(2, 64)), use_cache=False)")
        .replace(".logits.shape", "")
        .replace("num_hidden_layers=2", "num_hidden_layers=1")
    )
    out = tmp_path / "run.json"
    r = run_kernelevo(
        ["optimize", f"{LLAMA}::{target}", "--script", str(no_cache), "--json-out", str(out)],
        tmp_path,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    summary = json.loads(out.read_text())
    assert summary["candidates"].get("verified", 0) >= 1, summary
