"""Inductor-extracted candidates launched with the configuration Inductor's benchmark kept vs
the first it listed, against eager and torch.compile, and where the time goes per kernel.

    python bench/inductor_launch_configs.py [TASK.py ...] [--rep MS] [--out DIR]

Default tasks: KernelBench Level 2 convolution + epilogue tasks where the extraction was slower
than torch.compile on the H200 (25, 17, 32, 87) and one where it matched (57). Per task: the
kernels Inductor listed several configurations for (first -> kept), the medians (ms) of eager,
torch.compile, the candidate as extracted (kept) and the candidate launching every kernel's first
listed configuration, their ratios to torch.compile, and the per-kernel GPU time of the candidate
and of torch.compile (profiler, kernels of the same name side by side: a gap the configuration
does not explain shows there). Without a GPU: the listed configurations of a capture on the CPU.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
LEVEL2 = ROOT / "bench" / "kernelbench" / "level2"
DEFAULT = [
    "25_Conv2d_Min_Tanh_Tanh",
    "17_Conv2d_InstanceNorm_Divide",
    "32_Conv2d_Scaling_Min",
    "87_Conv2d_Subtract_Subtract_Mish",
    "57_Conv2d_ReLU_HardSwish",
]


def _several(captured: dict[str, Any]) -> list[str]:
    out = []
    for variant in captured["variants"]:
        for name, info in variant["kernels"].items():
            if len(info["configs"]) > 1:
                kept = info.get("chosen")
                out.append(
                    f"{name}: {len(info['configs'])} listed, first {_short(info['configs'][0])} -> "
                    + (f"kept {_short(kept)}" if kept else f"none kept ({info.get('chosen_note')})")
                )
    return out


def _short(config: dict[str, Any]) -> str:
    values = {**config["kwargs"], "w": config["num_warps"], "s": config["num_stages"]}
    return ",".join(f"{k}={v}" for k, v in values.items())


def _per_kernel(fn: Any, inputs: list[Any]) -> dict[str, float]:
    """GPU microseconds per call by kernel name (candidate suffixes dropped), over 5 calls."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        fn(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                fn(*inputs)
            torch.cuda.synchronize()
    out: dict[str, float] = {}
    for event in prof.key_averages():
        us = getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0)
        if us:
            name = event.key[:60].removesuffix("_v0")
            out[name] = out.get(name, 0.0) + us / 5
    return out


def measure(task: Path, rep: int) -> dict[str, Any]:
    import torch
    import triton.testing

    from kernelevo.offline.inductor import capture_inductor, rewrite
    from kernelevo.task import import_file, load_task_module

    captured = capture_inductor(task, device="cuda")
    if not captured.get("ok"):
        return {"task": task.stem, "error": captured.get("reason")}
    first = copy.deepcopy(captured)
    for variant in first["variants"]:
        for info in variant["kernels"].values():
            info.pop("chosen", None)
    module = load_task_module(task)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).cuda().eval()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    fns: dict[str, Any] = {"eager": model, "compile": torch.compile(model)}
    with tempfile.TemporaryDirectory() as tmp:
        for label, data in (("kept", captured), ("first", first)):
            path = Path(tmp) / f"{label}.py"
            path.write_text(rewrite(data))
            new = import_file(path, f"cand_{label}").ModelNew(*module.get_init_inputs()).cuda()
            new.load_state_dict(model.state_dict())
            fns[label] = new
        ms: dict[str, float] = {}
        with torch.no_grad():
            for label, fn in fns.items():
                fn(*inputs)  # compiles and tunes outside the timing
                torch.cuda.synchronize()
                ms[label] = triton.testing.do_bench(
                    lambda fn=fn: fn(*inputs), rep=rep, return_mode="median"
                )
        kernels = {label: _per_kernel(fns[label], inputs) for label in ("compile", "kept")}
    return {"task": task.stem, "several": _several(captured), "ms": ms, "kernels": kernels}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*")
    parser.add_argument("--rep", type=int, default=300, help="do_bench milliseconds per timing")
    parser.add_argument("--out", default=os.environ.get("OUT", ""))
    args = parser.parse_args()
    tasks = [Path(t) for t in args.tasks] or [LEVEL2 / f"{name}.py" for name in DEFAULT]
    missing = [str(t) for t in tasks if not t.is_file()]
    if missing:
        print(f"no such task file: {', '.join(missing)}")
        return 2
    import torch

    if not torch.cuda.is_available():
        from kernelevo.offline.inductor import capture_inductor

        print("no GPU: speed not measured; the configurations Inductor lists (CPU capture):")
        for task in tasks:
            captured = capture_inductor(task, device="cpu")
            lines = _several(captured) if captured.get("ok") else [str(captured.get("reason"))]
            print(f"{task.stem}:", *(f"  {line}" for line in lines or ["one each"]), sep="\n")
        return 0
    rows = [measure(task, args.rep) for task in tasks]
    if args.out:
        Path(args.out, "inductor_launch_configs.json").write_text(json.dumps(rows, indent=1))
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for row in rows:
        if "error" in row:
            print(f"{row['task']}: capture failed: {row['error']}")
            continue
        print(
            f"{row['task']}:", *(f"  {line}" for line in row["several"] or ["one each"]), sep="\n"
        )
        compile_us, kept_us = row["kernels"]["compile"], row["kernels"]["kept"]
        for name in sorted(set(compile_us) | set(kept_us), key=lambda n: -kept_us.get(n, 0))[:6]:
            print(
                f"  {name}: torch.compile {compile_us.get(name, 0):.0f} us, "
                f"candidate {kept_us.get(name, 0):.0f} us"
            )
    print(
        "| task | eager ms | torch.compile ms | kept ms | first ms | kept/compile | first/compile |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        if "ms" in row:
            m = row["ms"]
            print(
                f"| {row['task']} | {m['eager']:.4g} | {m['compile']:.4g} | {m['kept']:.4g} | "
                f"{m['first']:.4g} | {m['kept'] / m['compile']:.2f} | {m['first'] / m['compile']:.2f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
