"""Child process: compile a task's reference with Inductor and record what it generated.

Run as `python -m kernelevo.offline.inductor_capture TASK DEVICE SIZE OUT.json`. Nothing
runs: the wrapper code is captured when Inductor finishes code generation and the compile
is stopped there, so on a machine without a GPU (Inductor's Triton backend for CPU needs
a Triton CPU driver that is not installed) the kernels are still produced. The result is
plain JSON for `inductor_rewrite.py`, which turns it into a standalone candidate.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from kernelevo.offline.skeleton import signature_text, state_entries

SCALAR_DTYPES = {"torch.float32", "torch.float16", "torch.bfloat16", "torch.float64"}


class _Captured(Exception):
    pass


# The verifier's default policy lets a candidate keep the library GEMM and convolution when its own
# kernels do the rest; a task marked STRICT = True (a benchmark's rule) keeps only what it lists.
DEFAULT_LIBRARY_OPS = ("mm", "addmm", "bmm", "baddbmm", "convolution")


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
    elif not any(op.split(".")[-1] in ("mm", "addmm", "bmm", "baddbmm") for op in library_ops):
        cfg.max_autotune_gemm = True
        cfg.max_autotune_gemm_backends = "TRITON"
    torch._dynamo.reset()


def _source_name(grapharg: Any) -> str | None:
    if grapharg is None:
        return None
    name = grapharg.source.name
    return name() if callable(name) else name  # a method in older torch versions


def _input_key(inputs: list[Any]) -> list[Any]:
    import torch

    key: list[Any] = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            key.append(["tensor", x.dim(), str(x.dtype)])
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


def _kernel_meta(name: str, source: str, workdir: Path) -> dict[str, Any]:
    """Import one generated kernel with Inductor's autotuner replaced by a recorder."""
    from torch._inductor.runtime import triton_heuristics

    seen: dict[str, Any] = {}

    def record(
        size_hints,
        configs,
        triton_meta,
        heuristic_type,
        filename=None,
        inductor_meta=None,
        *_: Any,
        **__: Any,
    ):
        seen["configs"] = [
            {"kwargs": dict(c.kwargs), "num_warps": c.num_warps, "num_stages": c.num_stages}
            for c in configs
        ]
        seen["heuristic"] = str(getattr(heuristic_type, "name", heuristic_type))
        seen["signature"] = list(triton_meta.get("signature", {}).items())
        seen["constants"] = {
            str(k): v
            for k, v in triton_meta.get("constants", {}).items()
            if isinstance(v, (int, float, bool)) or v is None
        }
        meta = dict(inductor_meta or {})
        seen["inductor_meta"] = {
            k: meta[k]
            for k in (
                "grid_type",
                "fixed_grid",
                "extra_launcher_args",
                "precomputed_grids",
                "no_x_dim",
                "atomic_add_found",
                "kernel_name",
            )
            if k in meta
        }
        return lambda fn: fn

    original = triton_heuristics.cached_autotune
    triton_heuristics.cached_autotune = record
    try:
        path = workdir / f"{name}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(f"_kernelevo_inductor_{name}", path)
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    finally:
        triton_heuristics.cached_autotune = original
    if "configs" not in seen:
        raise RuntimeError(f"kernel {name}: no Inductor launch configuration found")
    return seen


def _kernels(wrapper: str, workdir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for node in ast.parse(wrapper).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "async_compile"
        ):
            continue
        name = node.targets[0].id  # type: ignore[attr-defined]
        if func.attr != "triton":
            out[name] = {
                "error": f"kernel {name} is compiled by async_compile.{func.attr}, not Triton"
            }
            continue
        source = node.value.args[1].value  # type: ignore[attr-defined]
        out[name] = {"source": source, **_kernel_meta(name, source, workdir)}
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
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    result: dict[str, Any] = {
        "device": device,
        "library_ops": library_ops,
        "state": [
            {"name": n, "shape": list(t.shape), "dtype": str(t.dtype), "parameter": p}
            for n, t, p in state
        ],
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
    elif isinstance(sample, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in sample):
        result["output"] = type(sample).__name__
    else:
        raise RuntimeError(
            f"the reference returns {type(sample).__name__}; only a tensor or a tuple/list of tensors is supported"
        )

    varying = _varying_dims(input_sets)
    result["dynamic_dims"] = {str(i): sorted(d) for i, d in varying.items()}
    seen_keys: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="kernelevo_inductor_") as tmp:
        for inputs in input_sets:
            key = _input_key(inputs)
            if key in seen_keys:
                continue
            seen_keys.append(key)
            captured: dict[str, Any] = {}

            def save(code: str, captured: dict[str, Any] = captured) -> None:
                captured["wrapper"] = code
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
            try:
                torch.compile(flat_forward, backend=backend, dynamic=None, fullgraph=True)(*flat)
            except Exception as exc:  # the capture hook stops every compile
                if "wrapper" not in captured:
                    raise RuntimeError(
                        f"torch.compile failed: {type(exc).__name__}: {str(exc)[:500]}"
                    ) from exc
            finally:
                GraphLowering.save_output_code = None
            if "library_only" in captured:
                raise LibraryOnly(
                    f"the graph is only the library call {', '.join(captured['library_only'])} (and views): "
                    "Inductor would generate no Triton kernel beside it"
                )
            captured["key"] = key
            captured["kernels"] = _kernels(captured["wrapper"], Path(tmp))
            result["variants"].append(captured)
    return result


def main(argv: list[str]) -> int:
    task_path, device, size, out = argv
    try:
        data = {"ok": True, **capture(task_path, device, size)}
    except LibraryOnly as exc:
        data = {"ok": False, "reason": str(exc)}
    except Exception as exc:
        data = {
            "ok": False,
            "reason": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc()[-3000:],
        }
    Path(out).write_text(json.dumps(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
