"""Ahead-of-time Triton compile for a real GPU target, without a GPU.

On the CPU machine kernels run in Triton's interpreter, which accepts code the real
compiler rejects; compiling each launched kernel for Hopper (sm_90) with the
signatures seen at run time catches those errors before the GPU ever sees them.
"""

from __future__ import annotations

from typing import Any

_DTYPES = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float64": "fp64",
    "int32": "i32",
    "int64": "i64",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "i1",
    "float8_e4m3fn": "fp8e4nv",
    "float8_e5m2": "fp8e5",
}


def _unwrap(obj: Any) -> Any:
    """Autotuner/Heuristics wrappers keep the JITFunction in `.fn`."""
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn") and seen < 8:
        obj = obj.fn
        seen += 1
    return obj if isinstance(obj, JITFunction) else None


def signature_for(jit_fn: Any, args: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """Build Triton's signature and constexpr map from the argument descriptions a launch recorded."""
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for p in jit_fn.params:
        desc = args.get(p.name)
        if p.is_constexpr:
            signature[p.name] = "constexpr"
            value = None if desc is None else next(iter(desc.values()))
            constexprs[p.name] = p.default if desc is None and p.default is not None else value
            continue
        if desc is None:
            raise ValueError(f"kernel {jit_fn.__name__}: no value recorded for argument {p.name}")
        kind, value = next(iter(desc.items()))
        if kind == "tensor":
            signature[p.name] = "*" + _DTYPES.get(value, "fp32")
        elif kind == "bool":
            signature[p.name] = "i1"
        elif kind == "int":
            signature[p.name] = "i32" if -(2**31) <= value < 2**31 else "i64"
        elif kind == "float":
            signature[p.name] = "fp32"
        elif kind == "none":
            signature[p.name] = "constexpr"
            constexprs[p.name] = None
        else:
            raise ValueError(
                f"kernel {jit_fn.__name__}: cannot compile argument {p.name} of type {value}"
            )
    return signature, constexprs


def compile_launched(
    module: Any, launches: dict[str, dict[str, Any]], arch: int = 90
) -> list[dict[str, Any]]:
    """Compile every kernel that launched, for `sm_<arch>`. Returns one record per kernel.

    `module` must have been imported with the interpreter off, so its kernels are JITFunctions.
    """
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    target = GPUTarget("cuda", arch, 32)
    records = []
    for name, launch in launches.items():
        jit_fn = _unwrap(getattr(module, name, None))
        if jit_fn is None:
            records.append({"kernel": name, "ok": True, "skipped": "not a module-level kernel"})
            continue
        try:
            signature, constexprs = signature_for(jit_fn, launch["args"])
            src = ASTSource(fn=jit_fn, signature=signature, constexprs=constexprs)
            compiled = triton.compile(src, target=target, options=dict(launch.get("options", {})))
            meta = compiled.metadata
            records.append(
                {
                    "kernel": name,
                    "ok": True,
                    "num_warps": meta.num_warps,
                    "shared": meta.shared,
                    "n_regs": getattr(compiled, "n_regs", None),
                }
            )
        except Exception as exc:  # the compiler raises many types; all mean "does not compile"
            records.append({"kernel": name, "ok": False, "error": _trim(str(exc))})
    return records


def _trim(message: str, limit: int = 2000) -> str:
    lines = [ln for ln in message.splitlines() if ln.strip()]
    text = "\n".join(lines[:40])
    return text[:limit]
