"""Child process: compile a task's reference with Inductor and record what it generated.

Run as `python -m kernelevo.offline.inductor_capture TASK DEVICE SIZE OUT.json`. The wrapper
code is captured when Inductor finishes code generation. On the CPU the compile is stopped
there and nothing runs, so on a machine without a GPU (Inductor's Triton backend for CPU needs
a Triton CPU driver that is not installed) the kernels are still produced. On a GPU the
compiled function then runs once on the task's inputs, so that Inductor's benchmark picks
each kernel's launch configuration as it does under torch.compile (inductor_choice.py). The
result is plain JSON for `inductor_rewrite.py`, which turns it into a standalone candidate.
"""

from __future__ import annotations

import json
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from kernelevo.offline.inductor_choice import AutotunerLog, chosen_configs, forget_loaded_kernels
from kernelevo.offline.inductor_kernel_record import kernels
from kernelevo.offline.skeleton import signature_text, state_entries, state_records
from kernelevo.targets.gpu_only import gpu_only_here

SCALAR_DTYPES = {"torch.float32", "torch.float16", "torch.bfloat16", "torch.float64"}


class _Captured(Exception):
    pass


# The verifier's default policy lets a candidate keep the library GEMM, convolution and attention
# when its own kernels do the rest (checks/library_ops.py); a task marked STRICT = True (a
# benchmark's rule) keeps only what it lists.
DEFAULT_LIBRARY_OPS = (
    "mm",
    "addmm",
    "bmm",
    "baddbmm",
    "convolution",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
)


def library_ops_allowed(module: Any) -> list[str]:
    listed = list(getattr(module, "ALLOWED_LIBRARY_OPS", []) or [])
    if getattr(module, "STRICT", False):
        return listed
    return listed + [op for op in DEFAULT_LIBRARY_OPS if op not in listed]


class LibraryOnly(Exception):
    """The graph is only library matrix products and views: Inductor would emit no Triton kernel,
    so the extraction stops before compiling (seconds a search would spend for nothing)."""


MATMUL_CALLS = {"matmul", "mm", "bmm", "linear", "addmm", "baddbmm"}
VIEW_CALLS = {
    "t",
    "view",
    "reshape",
    "transpose",
    "permute",
    "contiguous",
    "getitem",
    "size",
    "flatten",
    "squeeze",
    "unsqueeze",
    "expand",
}


def library_only(gm: Any) -> list[str] | None:
    """The matrix-product calls of a Dynamo graph made of nothing else (views aside), else None."""
    ops: set[str] = set()
    for node in gm.graph.nodes:
        if node.op == "call_module":
            return None
        if node.op in ("call_function", "call_method"):
            name = (
                node.target
                if isinstance(node.target, str)
                else getattr(node.target, "__name__", str(node.target))
            )
            if name in MATMUL_CALLS:
                ops.add(name)
            elif name not in VIEW_CALLS:
                return None
    return sorted(ops) or None


def _configure(device: str, library_ops: list[str]) -> None:
    import torch
    import torch._dynamo.config as dynamo_cfg
    import torch._inductor.config as cfg
    import torch.fx.experimental._config as fx_cfg

    settings = [
        (cfg, "fx_graph_cache", False),
        (cfg, "autotune_local_cache", False),
        (cfg.triton, "cudagraphs", False),
        (cfg, "graph_partition", False),  # one call() with every launch inline
        (cfg, "freezing", False),
        (dynamo_cfg, "specialize_float", True),
        (fx_cfg, "use_duck_shape", False),  # equal sizes must not become one symbol
    ]
    for module, name, value in settings:
        if hasattr(module, name):  # older torch versions lack some of them
            setattr(module, name, value)
    if device == "cpu":
        cfg.cpu_backend = "triton"
        import torch.utils._triton as torch_triton
        from triton.runtime.driver import driver

        try:
            _ = driver.active  # a property: raises where Triton has no driver
        except RuntimeError:  # no Triton driver here: codegen only needs a stable hash
            torch_triton.triton_hash_with_backend = lambda: "0" * 64
    else:
        cfg.compile_threads = 1  # kernels built in this process, where AutotunerLog sees them
        if not any(op.split(".")[-1] in ("mm", "addmm", "bmm", "baddbmm") for op in library_ops):
            cfg.max_autotune_gemm = True
            cfg.max_autotune_gemm_backends = "TRITON"
    torch._dynamo.reset()


def _source_name(grapharg: Any) -> str | None:
    if grapharg is None:
        return None
    name = grapharg.source.name
    return name() if callable(name) else name  # a method in older torch versions


def _input_key(inputs: list[Any]) -> list[Any]:
    """What a compiled variant was specialised on, per input: a tensor's rank and dtype, a
    sequence's items (a layer's (cos, sin) pair), a plain value itself (ints are dynamic)."""
    import torch

    key: list[Any] = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            key.append(["tensor", x.dim(), str(x.dtype)])
        elif isinstance(x, (list, tuple)):
            key.append(["sequence", _input_key(list(x))])
        else:
            key.append([type(x).__name__, repr(x) if not isinstance(x, int) else None])
    return key


def _varying_dims(input_sets: list[list[Any]]) -> dict[int, set[int]]:
    """Per input, the dims (counted from the right) whose size is not the same in every input
    set: those stay symbolic in the kernels, every other size is specialised, as the task
    never asks for another (a weight's width, a fixed vocabulary)."""
    import torch

    out: dict[int, set[int]] = {}
    for i in range(len(input_sets[0])):
        shapes = [
            list(s[i].shape) for s in input_sets if i < len(s) and isinstance(s[i], torch.Tensor)
        ]
        if not shapes:
            continue
        longest = max(len(shape) for shape in shapes)
        for back in range(1, longest + 1):
            sizes = {shape[-back] if back <= len(shape) else None for shape in shapes}
            if len(sizes) > 1:
                out.setdefault(i, set()).add(-back)
    return out


def capture(task_path: str, device: str, size: str) -> dict[str, Any]:
    import torch
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.graph import GraphLowering

    from kernelevo.task import load_task_module

    module = load_task_module(task_path, size=size)
    library_ops = library_ops_allowed(module)
    _configure(device, library_ops)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).to(device).eval()
    with torch.device(
        device
    ):  # made where they are used: a 6 GiB input is not drawn on the CPU first
        input_sets = [list(module.get_inputs())]
        if hasattr(module, "get_extra_inputs"):
            input_sets += [list(s) for s in module.get_extra_inputs()]

    state = state_entries(model)
    names = [n for n, _, _ in state]
    k = len(state)

    def flat_forward(*flat: Any) -> tuple:
        out = torch.func.functional_call(
            model, dict(zip(names, flat[:k], strict=True)), tuple(flat[k:])
        )
        if isinstance(out, dict):  # a Hugging Face ModelOutput: its tensors, in order
            out = tuple(out.values())
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        return tuple(o for o in out if o is not None)  # a None stays the candidate's to return

    result: dict[str, Any] = {
        "device": device,
        "library_ops": library_ops,
        "state": state_records(model, state),
        "init_params": signature_text(type(model).__init__),
        "forward_params": signature_text(type(model).forward),
        "variants": [],
    }
    from torch._subclasses.fake_tensor import FakeTensorMode

    # the output's kind only: fake tensors, so no GPU memory is taken and nothing runs
    with torch.no_grad(), FakeTensorMode(allow_non_fake_inputs=True):
        sample = model(*[x.to(device) if isinstance(x, torch.Tensor) else x for x in input_sets[0]])
    if isinstance(sample, torch.Tensor):
        result["output"] = "tensor"
    elif isinstance(sample, (tuple, list)) and all(
        isinstance(o, torch.Tensor) or o is None for o in sample
    ):  # an attention layer's (output, weights, None)
        result["output"] = type(sample).__name__
        result["output_none"] = [i for i, o in enumerate(sample) if o is None]
        result["output_count"] = len(sample)
    elif isinstance(sample, dict) and all(
        isinstance(k, str) and isinstance(o, torch.Tensor) for k, o in sample.items()
    ):
        result["output"], result["output_keys"] = "dict", list(sample)
    else:
        raise RuntimeError(
            f"the reference returns {type(sample).__name__}; only a tensor, a tuple/list of "
            "tensors (and None) or a dict of tensors is supported"
        )

    varying = _varying_dims(input_sets)
    result["dynamic_dims"] = {str(i): sorted(d) for i, d in varying.items()}
    seen_keys: list[Any] = []
    benchmark = device == "cuda"  # Inductor's benchmark of its configurations needs a GPU
    with tempfile.TemporaryDirectory(prefix="kernelevo_inductor_") as tmp:
        for inputs in input_sets:
            key = _input_key(inputs)
            if key in seen_keys:
                continue
            seen_keys.append(key)
            captured: dict[str, Any] = {}

            def save(code: str, captured: dict[str, Any] = captured) -> None:
                captured.setdefault("wrapper", code)
                if not benchmark:
                    raise _Captured()

            def backend(
                gm: Any, example_inputs: list[Any], captured: dict[str, Any] = captured
            ) -> Any:
                only = (
                    library_only(gm)
                    if MATMUL_CALLS & {op.split(".")[-1] for op in library_ops}
                    else None
                )
                if only:
                    captured["library_only"] = only
                    return gm.forward
                captured["placeholders"] = []
                for node in gm.graph.nodes:
                    if node.op == "placeholder":
                        arg = node.meta.get("grapharg")
                        value = node.meta.get("example_value")
                        static = None
                        if isinstance(value, torch.Tensor):
                            static = [d if isinstance(d, int) else None for d in value.shape]
                        captured["placeholders"].append(
                            {"source": _source_name(arg), "static_shape": static}
                        )
                return compile_fx(gm, example_inputs)

            flat = [t.detach() for _, t, _ in state] + [
                x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs
            ]
            for t in flat[:k]:
                torch._dynamo.mark_static(t)
            for i, dims in varying.items():
                x = flat[k + i]
                for back in dims:
                    if isinstance(x, torch.Tensor) and back >= -x.dim():
                        torch._dynamo.maybe_mark_dynamic(x, x.dim() + back)
            GraphLowering.save_output_code = staticmethod(save)
            torch._dynamo.reset()
            log = AutotunerLog()
            why = (
                "Inductor's benchmark of its configurations runs only on a GPU"
                if not benchmark
                else "Inductor built no autotuner for this kernel in this process"
            )
            if benchmark:
                forget_loaded_kernels()
            try:
                with log.recording():
                    compiled = torch.compile(
                        flat_forward, backend=backend, dynamic=None, fullgraph=True
                    )
                    compiled(*flat)
                    if benchmark:
                        torch.cuda.synchronize()
            except Exception as exc:  # on the CPU the capture hook stops every compile
                if "wrapper" not in captured:
                    raise RuntimeError(
                        f"torch.compile failed: {type(exc).__name__}: {str(exc)[:500]}"
                    ) from exc
                if benchmark:
                    why = f"the compiled reference failed on the task's inputs ({type(exc).__name__}: {str(exc)[:200]})"
            finally:
                GraphLowering.save_output_code = None
            if "library_only" in captured:
                raise LibraryOnly(
                    f"the graph is only the library call {', '.join(captured['library_only'])} (and views): "
                    "Inductor would generate no Triton kernel beside it"
                )
            if "wrapper" not in captured:  # nothing to compile: the outputs are the inputs
                raise LibraryOnly(
                    "the graph computes nothing (it returns its inputs or views of them): Inductor "
                    "generated no code for it"
                )
            captured["key"] = key
            chosen, why_not = chosen_configs(log.made)
            captured["kernels"] = kernels(captured["wrapper"], Path(tmp), chosen, why_not, why)
            result["variants"].append(captured)
    return result


def main(argv: list[str]) -> int:
    task_path, device, size, out = argv
    try:
        data = {"ok": True, **capture(task_path, device, size)}
    except LibraryOnly as exc:
        data = {"ok": False, "reason": str(exc)}
    except Exception as exc:
        where = gpu_only_here(exc)
        if where is not None:
            data = {
                "ok": False,
                "reason": f"the reference's own GPU code ({where}) cannot be "
                "compiled or run on this machine's CPU",
            }
            Path(out).write_text(json.dumps(data))
            return 0
        data = {
            "ok": False,
            "reason": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc()[-3000:],
        }
    Path(out).write_text(json.dumps(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
