"""Hugging Face transformers' model files, as installed, made into tasks from a user's script.

For each model family a small script builds a tiny model of it and runs one forward pass (what a
user's training or inference script does); every target KernelEvo detects in the family's
modeling file is then built into a task with `--script` and the task checked on the CPU.
A target the script never calls (the eager attention function when SDPA is the default, heads
the script does not use) cannot be recorded and is counted apart.

Usage: python bench/transformers_tasks.py [--write docs/TRANSFORMERS.md] [--only llama,gpt2]
Needs transformers (the dev extra). CPU only; about 8 s a target.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", "num_key_value_heads=2"),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", "num_key_value_heads=2"),
    "mistral": ("MistralConfig", "MistralForCausalLM", "num_key_value_heads=2"),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", "num_key_value_heads=2, head_dim=32"),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", None),
    "bert": ("BertConfig", "BertModel", ""),
    "vit": ("ViTConfig", "ViTModel", "image_size=32, patch_size=8"),
    "mixtral": (
        "MixtralConfig",
        "MixtralForCausalLM",
        "num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2",
    ),
    "t5": ("T5Config", "T5ForConditionalGeneration", None),
}
SIZES = "hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4"
OWN_SIZES = {  # families that name their sizes their own way
    "gpt2": "n_embd=128, n_layer=2, n_head=4, vocab_size=500, n_positions=128",
    "t5": "d_model=128, d_ff=256, num_layers=2, num_heads=4, d_kv=32, vocab_size=500",
}


def script_for(family: str, call: str = "") -> str:
    config, model, extra = FAMILIES[family]
    if extra is None:
        kwargs = OWN_SIZES[family]
    else:
        kwargs = (
            SIZES
            + (", vocab_size=500" if family != "vit" else "")
            + (f", {extra}" if extra else "")
        )
    inputs = "torch.randn(2, 3, 32, 32)" if family == "vit" else "torch.randint(0, 500, (2, 32))"
    if family == "t5":  # an encoder-decoder: the decoder's inputs too
        inputs = "ids := torch.randint(0, 500, (2, 32)), decoder_input_ids=ids"
    return textwrap.dedent(
        f"""
        import torch
        from transformers import {config}, {model}

        model = {model}({config}({kwargs})).eval()
        with torch.no_grad():
            model({inputs}{call})
        """
    )


def run_family(family: str, folder: Path) -> list[dict]:
    from kernelevo.targets.detect import analyze_file
    from kernelevo.targets.extract import ExtractError, build_task, check_task

    spec = importlib.util.find_spec(f"transformers.models.{family}.modeling_{family}")
    assert spec is not None and spec.origin
    script = folder / f"run_{family}.py"
    script.write_text(script_for(family))
    # the script a user writes after the check's advice for outputs holding a KV cache
    no_cache = folder / f"run_{family}_no_cache.py"
    no_cache.write_text(script_for(family, ", use_cache=False"))
    rows = []
    for target in analyze_file(spec.origin).targets:
        t0 = time.perf_counter()
        row: dict = {"family": family, "target": target.id}
        try:
            built = build_task(
                spec.origin,
                target.id,
                script=str(script),
                out_dir=str(folder / family),
                timeout=120,
            )
            check = check_task(built.path, timeout=120)
            row.update(
                outcome="ok" if check.ok else "check failed",
                detail=check.message,
                inputs=built.inputs,
            )
            if check.ok is False and "use_cache=False" in check.message:
                again = build_task(
                    spec.origin,
                    target.id,
                    script=str(no_cache),
                    out_dir=str(folder / family / "no_cache"),
                    timeout=120,
                )
                advised = check_task(again.path, timeout=120)
                row["advice"] = "ok" if advised.ok else f"still fails: {advised.message}"
        except ExtractError as exc:
            never = "without calling" in str(exc)
            row.update(outcome="not called by the script" if never else "refused", detail=str(exc))
        # the scratch folder and this checkout, named, not printed
        for key in ("detail", "inputs", "advice"):
            if key in row:
                row[key] = row[key].replace(str(folder), "<scratch>").replace(str(ROOT), ".")
        row["s"] = round(time.perf_counter() - t0, 1)
        rows.append(row)
        print(json.dumps(row)[:300], flush=True)
    return rows


def table(rows: list[dict], version: str, seconds: float) -> str:
    called = [r for r in rows if r["outcome"] != "not called by the script"]
    ok = [r for r in called if r["outcome"] == "ok"]
    advised = [r for r in called if "advice" in r]
    lines = [
        "# Hugging Face transformers' models as tasks",
        "",
        "Written by `bench/transformers_tasks.py --write` (do not edit by hand). Each family's",
        "modeling file as installed (transformers " + version + "), unedited; a script builds a",
        "tiny model of the family and runs one forward pass; each detected target is built into a",
        "task with `--script` and checked on this machine's CPU.",
        "",
        f"**Tasks built and checked: {len(ok)} of the {len(called)} targets the scripts call** "
        f"({len(rows) - len(called)} more targets are never called by them) · {seconds:.0f} s",
        "",
        f"The check refuses {len(advised)} targets whose outputs hold a KV cache object and says to "
        "call with `use_cache=False`; run again with that one change to the script, "
        f"{sum(1 for r in advised if r['advice'] == 'ok')} of them build and pass the check "
        "(the detail column's last part).",
        "",
        "| family | target | outcome | detail |",
        "|---|---|---|---|",
    ]
    for r in rows:
        detail = r["detail"] if r["outcome"] != "ok" else r.get("inputs", "")
        detail = detail.replace("|", "/").replace("\n", " ")[:220]
        if "advice" in r:
            detail += f" · with use_cache=False: {r['advice'][:120]}"
        lines.append(f"| {r['family']} | {r['target']} | {r['outcome']} | {detail} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="comma-separated families (default: all)")
    p.add_argument("--write", help="write the markdown table to this file")
    args = p.parse_args()
    import transformers

    families = args.only.split(",") if args.only else list(FAMILIES)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kernelevo-transformers-") as tmp:
        rows = [r for f in families for r in run_family(f, Path(tmp))]
    text = table(rows, transformers.__version__, time.perf_counter() - t0)
    if args.write:
        Path(args.write).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
