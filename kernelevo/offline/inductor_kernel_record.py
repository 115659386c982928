"""The Triton kernels in Inductor's wrapper code, and what each is launched with.

Per kernel: its source, signature and constants, the launch configurations Inductor lists for
it (read by importing the kernel with Inductor's autotuner replaced by a recorder, so nothing
compiles) and, where the capture ran Inductor's benchmark on a GPU (inductor_choice.py), the
configuration that benchmark kept. Runs in the capture child (imports torch's Inductor runtime).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

from kernelevo.offline.inductor_choice import ConfigRecord, config_record


def kernel_meta(name: str, source: str, workdir: Path) -> dict[str, Any]:
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
        seen["configs"] = [config_record(c) for c in configs]
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


def kernels(
    wrapper: str,
    workdir: Path,
    chosen: dict[str, ConfigRecord] | None = None,
    why_not: dict[str, str] | None = None,
    default_why: str = "",
) -> dict[str, Any]:
    """Every kernel the wrapper compiles, by name. A kernel with several listed configurations
    gets "chosen" (the one Inductor's benchmark kept) or "chosen_note" (why there is none: the
    rewrite then launches the first listed, as before)."""
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
        info = {"source": source, **kernel_meta(name, source, workdir)}
        if chosen and name in chosen:
            info["chosen"] = chosen[name]
        elif len(info["configs"]) > 1:
            info["chosen_note"] = (why_not or {}).get(name) or default_why
        out[name] = info
    return out
