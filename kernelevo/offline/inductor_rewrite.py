"""Turn captured Inductor output (see inductor_capture.py) into a standalone Triton candidate.

Pure text and AST work: no torch here. The candidate keeps Inductor's kernels as plain
`@triton.jit` functions launched with literal configs (the parameter search can vary
them), replays the wrapper's `call()` allocations and launches, and dispatches on the
inputs' rank and dtype between the variants Inductor compiled (sizes that differ between
the task's input sets stay symbolic; the others are specialised and checked).
Anything it cannot reproduce faithfully raises NotExtractable with the reason.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from kernelevo.ast_names import dotted_name
from kernelevo.offline.inductor_helpers import (
    HELPERS,
    LIBDEVICE_IN_TL,
    LIBDEVICE_OWN,
    helper_sources,
)
from kernelevo.offline.skeleton import STATE_HELPER, SignatureError, forward_names, model_class


class NotExtractable(Exception):
    """Inductor's output for this task cannot become a standalone candidate (message says why)."""


EXTERN_TO_ATEN = {
    "mm": "mm",
    "addmm": "addmm",
    "bmm": "bmm",
    "baddbmm": "baddbmm",
    "convolution": "convolution",
}
ALLOWED_METHODS = {"item", "zero_", "fill_", "size", "stride", "storage_offset", "clear"}
ALLOWED_BUILTINS = {"max", "min", "int", "float", "abs", "bool", "len", "tuple"}
BLOCK_OF = {"xnumel": "XBLOCK", "ynumel": "YBLOCK", "znumel": "ZBLOCK", "r0_numel": "R0_BLOCK"}

HEADER = '''"""Candidate extracted from torch.compile (Inductor) output: standalone Triton kernels with
fixed launch configurations (no torch.compile, no autotuning at run time)."""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''

RUNTIME = '''

def _layout(t, size, stride, name=""):
    """The kernels index with the sizes and strides they were generated for."""
    if t.dim() != len(size) or any(a != b for a, b in zip(t.shape, size)):
        raise ValueError(f"input {name}: shape {tuple(t.shape)}, kernels need {tuple(size)}")
    if any(n > 1 and a != b for a, b, n in zip(t.stride(), stride, size)):
        raise ValueError(f"input {name}: strides {t.stride()}, kernels need {tuple(stride)} (make it contiguous)")
    if t.numel() >= 2**31:
        raise ValueError(f"input {name}: {t.numel()} elements overflow the kernels' 32-bit indexing")


def _reinterpret(t, size, stride, offset):
    return torch.as_strided(t, size, stride, t.storage_offset() + offset)

'''


def _grid_expr(
    grid_type: str,
    numels: dict[str, str],
    params: set[str],
    launch_kw: dict[str, Any],
    extra: list[str],
) -> str:
    def blocks(numel: str) -> str:
        expr = numels.get(numel)
        if expr is None:
            raise NotExtractable(f"grid needs {numel}, which the launch does not pass")
        block = BLOCK_OF[numel]
        if block in launch_kw:
            return f"triton.cdiv({expr}, meta[{block!r}])"
        return expr if block not in params else f"triton.cdiv({expr}, {block})"

    if grid_type == "Grid1D":
        return f"({blocks('xnumel')}, 1, 1)"
    if grid_type == "Grid2D":
        return f"({blocks('xnumel')}, {blocks('ynumel')}, 1)"
    if grid_type == "Grid3D":
        return f"({blocks('xnumel')}, {blocks('ynumel')}, {blocks('znumel')})"
    if grid_type == "BatchMatmulGrid3D":
        return f"({blocks('znumel')}, {blocks('ynumel')}, {blocks('xnumel')})"
    if grid_type == "Grid2DWithYZOverflow":
        return f"_yz_overflow_grid({blocks('xnumel')}, {blocks('ynumel')})"
    if grid_type == "SplitScanGrid":
        return f"({blocks('r0_numel')}, {numels['xnumel']}, 1)"
    if grid_type == "CooperativeReductionGrid":
        return f"(meta['RSPLIT'], {blocks('xnumel')}, 1)"
    if grid_type == "FixedGrid" and len(extra) == 3:
        return f"({extra[0]}, {extra[1]}, {extra[2]})"
    raise NotExtractable(f"Inductor grid type {grid_type} is not supported by the extraction")


YZ_OVERFLOW = """

def _yz_overflow_grid(x, y):
    z = -(-y // 65535)
    return (x, 0 if z == 0 else -(-y // z), z)
"""


class _Kernels:
    """Rewrites kernel sources; collects the helpers they need."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.helpers: set[str] = set()
        self.uses_libdevice = False
        self.sources: dict[str, str] = {}  # rewritten source (with placeholder name) -> final name
        self.text: list[str] = []

    def add(self, name: str, info: dict[str, Any], suffix: str) -> tuple[str, list[str]]:
        """Returns the candidate's name for the kernel and its parameter names."""
        if "error" in info:
            raise NotExtractable(info["error"])
        tree = ast.parse(info["source"])
        lines = info["source"].splitlines()
        funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        main = next((f for f in funcs if f.name == name), None)
        if main is None:
            raise NotExtractable(f"kernel {name}: function not found in Inductor's source")
        params = [a.arg for a in main.args.args]
        renames = {f.name: f"{f.name}{suffix}" for f in funcs}
        chunks = []
        for f in funcs:
            body = "\n".join(lines[f.lineno - 1 : f.end_lineno])
            chunks.append("@triton.jit\n" + body)
        text = "\n\n\n".join(chunks)
        text = self._replace_calls(text, name)
        key = re.sub(rf"\b{re.escape(name)}\b", "__KERNEL__", text)
        if key in self.sources:
            return self.sources[key], params
        for old, new in renames.items():
            text = re.sub(rf"\b{re.escape(old)}\b", new, text)
        self.sources[key] = renames[name]
        self.text.append(text)
        return renames[name], params

    def _replace_calls(self, text: str, kernel: str) -> str:
        def helper(m: re.Match[str]) -> str:
            fn = m.group(1)
            if fn not in HELPERS:
                raise NotExtractable(
                    f"kernel {kernel} uses Inductor helper triton_helpers.{fn}, which has no standalone version here"
                )
            self.helpers.add(fn)
            return f"_ke_{fn}"

        def libdevice(m: re.Match[str]) -> str:
            fn = m.group(1)
            if fn in LIBDEVICE_IN_TL and self.device == "cpu":
                return f"tl.{fn}"
            if self.device != "cpu":
                self.uses_libdevice = True
                return m.group(0)
            if fn in LIBDEVICE_OWN:
                self.helpers.add(fn)
                return f"_ke_{fn}"
            raise NotExtractable(
                f"kernel {kernel} calls libdevice.{fn}, which the Triton interpreter cannot run"
            )

        text = re.sub(r"\btriton_helpers\.(\w+)", helper, text)
        text = re.sub(r"\blibdevice\.(\w+)", libdevice, text)
        text = re.sub(r"\btl_math\.", "tl.math.", text)
        if re.search(
            r"\b(triton_heuristics|DeviceProperties|ReductionHint|TileHint|AutotuneHint)\b", text
        ):
            raise NotExtractable(
                f"kernel {kernel} refers to Inductor runtime objects inside its body"
            )
        return text


class _CallBody(ast.NodeTransformer):
    """Rewrites one `call(args)` function of Inductor's wrapper into `_call_vN(args, device)`."""

    def __init__(
        self,
        kernels: dict[str, dict[str, Any]],
        registry: _Kernels,
        suffix: str,
        library_ops: list[str],
    ) -> None:
        self.kernels = kernels
        self.registry = registry
        self.suffix = suffix
        self.allowed = {op.split(".")[-1] for op in library_ops}
        self.uses_overflow_grid = False

    def visit_With(self, node: ast.With) -> Any:
        items = [
            dotted_name(i.context_expr.func)
            if isinstance(i.context_expr, ast.Call)
            else dotted_name(i.context_expr)
            for i in node.items
        ]
        if all(i.endswith("_DeviceGuard") or i.endswith("device") for i in items):
            out: list[ast.AST] = []
            for stmt in node.body:
                new = self.visit(stmt)
                out += [n for n in (new if isinstance(new, list) else [new]) if n is not None]
            return out
        raise NotExtractable(f"wrapper uses a `with {items[0]}` block")

    def visit_Expr(self, node: ast.Expr) -> Any:
        if isinstance(node.value, ast.Call):
            name = dotted_name(node.value.func)
            if name in ("assert_alignment", "torch.cuda.set_device", "torch.cuda._set_device"):
                return None
            if name == "assert_size_stride":
                node.value.func = ast.Name("_layout", ast.Load())
                return node
            if name.endswith(".run") and name[:-4] in self.kernels:
                node.value.args = [self.visit(a) for a in node.value.args]
                return ast.Expr(self._launch(node.value, name[:-4]))
        return self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> Any:
        if isinstance(node.value, ast.Call) and dotted_name(node.value.func) == "get_raw_stream":
            return None
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        name = dotted_name(node.func)
        if name in (
            "empty_strided_cpu",
            "empty_strided_cuda",
            "empty_strided",
            "torch.empty_strided",
        ):
            size, stride, *rest = node.args
            keywords = [k for k in node.keywords if k.arg not in ("device", "dtype")]
            dtype = (
                rest[0]
                if rest
                else next((k.value for k in node.keywords if k.arg == "dtype"), None)
            )
            if dtype is None:
                raise NotExtractable("wrapper allocates without a dtype")
            return ast.Call(
                ast.Attribute(ast.Name("torch", ast.Load()), "empty_strided", ast.Load()),
                [size, stride],
                [
                    *keywords,
                    ast.keyword("dtype", dtype),
                    ast.keyword("device", ast.Name("device", ast.Load())),
                ],
            )
        if name == "reinterpret_tensor":
            node.func = ast.Name("_reinterpret", ast.Load())
            return node
        if name.startswith("extern_kernels."):
            op = name.split(".", 1)[1]
            if op not in EXTERN_TO_ATEN:
                raise NotExtractable(
                    f"Inductor calls the extern kernel {op}, which has no standalone equivalent here"
                )
            if EXTERN_TO_ATEN[op] in self.allowed:
                node.func = ast.Attribute(
                    ast.Name("torch", ast.Load()), EXTERN_TO_ATEN[op], ast.Load()
                )
                return node
            raise NotExtractable(
                f"Inductor calls the library op {op} (extern kernel); the task does not allow it "
                "(ALLOWED_LIBRARY_OPS)"
            )
        if name.startswith(("aten.", "torch.ops.")):
            op = (
                name.split(".")[-2]
                if name.split(".")[-1] in ("default", "Tensor", "Scalar")
                else name.split(".")[-1]
            )
            if op in self.allowed:
                if name.startswith("aten."):
                    node.func = ast.parse("torch.ops." + name, mode="eval").body
                return node
            raise NotExtractable(
                f"Inductor falls back to the library op {name}; the task does not allow it"
            )
        return node

    def _launch(self, call: ast.Call, kernel: str) -> ast.Call:
        info = self.kernels[kernel]
        unknown = [k.arg for k in call.keywords if k.arg != "stream"]
        if unknown:
            raise NotExtractable(
                f"kernel {kernel} is launched with {', '.join(map(str, unknown))}= "
                "(an Inductor launch convention this extraction does not know)"
            )
        final, params = self.registry.add(kernel, info, self.suffix)
        sig = info["signature"]
        constants = info.get("constants", {})
        runtime = [n for n, t in sig if t != "constexpr" or n in constants]
        args = list(call.args)
        meta = info.get("inductor_meta", {})
        extra_names = meta.get("extra_launcher_args", []) or []
        extra = [ast.unparse(a) for a in args[len(runtime) :]] if extra_names else []
        if len(args) != len(runtime) + len(extra_names):
            raise NotExtractable(
                f"kernel {kernel}: launch passes {len(args)} arguments, signature has {len(runtime)}"
            )
        args = args[: len(runtime)]
        numels = {n: ast.unparse(a) for n, a in zip(runtime, args, strict=False) if n in BLOCK_OF}
        config = info["configs"][0]
        launch_kw: dict[str, Any] = {}
        for k, v in config["kwargs"].items():
            if k in params and k not in runtime:
                launch_kw[k] = v
        grid_type = meta.get("grid_type", "Grid1D")
        grid = _grid_expr(grid_type, numels, set(params), launch_kw, extra)
        self.uses_overflow_grid |= grid_type == "Grid2DWithYZOverflow"
        missing = [p for p in params if p not in runtime and p not in launch_kw]
        if missing:
            raise NotExtractable(
                f"kernel {kernel}: no value for constexpr parameter(s) {', '.join(missing)}"
            )
        keywords = [ast.keyword(k, ast.Constant(v)) for k, v in launch_kw.items()]
        keywords += [
            ast.keyword("num_warps", ast.Constant(config["num_warps"])),
            ast.keyword("num_stages", ast.Constant(config["num_stages"])),
        ]
        grid_fn = ast.parse(f"lambda meta: {grid}", mode="eval").body
        target = ast.Subscript(ast.Name(final, ast.Load()), grid_fn, ast.Load())
        return ast.Call(target, args, keywords)


def _check_calls(fn: ast.FunctionDef, kernel_names: set[str], library: set[str]) -> None:
    local = {a.arg for a in fn.args.args}
    for node in ast.walk(fn):
        if isinstance(node, (ast.Name,)) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
    ok_funcs = {
        "torch.empty_strided",
        "_reinterpret",
        "_layout",
        "_yz_overflow_grid",
        "triton.cdiv",
    } | ALLOWED_BUILTINS
    ok_funcs |= {f"torch.{op}" for op in library}
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Subscript) and dotted_name(node.func.value) in kernel_names:
            continue
        name = dotted_name(node.func)
        if name in ok_funcs or name.startswith("math.") or name.startswith("torch.ops.aten."):
            continue
        if (
            isinstance(node.func, ast.Attribute)
            and node.func.attr in ALLOWED_METHODS
            and name.split(".")[0] in local
        ):
            continue
        raise NotExtractable(
            f"the wrapper calls {name or ast.unparse(node.func)}, which has no standalone equivalent"
        )


def _call_function(wrapper: str) -> ast.FunctionDef:
    tree = ast.parse(wrapper)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    raise NotExtractable("no call() function in Inductor's output")


def _input_expr(source: str | None, state: list[dict[str, Any]], inputs: list[str]) -> str:
    m = re.fullmatch(r"L\['flat'\]\[(\d+)\](.*)", source or "")
    if m is None:
        raise NotExtractable(
            f"graph input {source} has no counterpart among the parameters and inputs"
        )
    index, rest = int(m.group(1)), m.group(2)
    if index < len(state):
        entry = state[index]
        getter = "get_parameter" if entry["parameter"] else "get_buffer"
        base = f"self.{getter}({entry['name']!r})"
    else:
        base = inputs[index - len(state)]
    if rest == "":
        return base
    m2 = re.fullmatch(r"\.(size|stride)\(\)\[(\d+)\]", rest)
    if m2:
        return f"{base}.{m2.group(1)}({m2.group(2)})"
    if rest == ".storage_offset()":
        return f"{base}.storage_offset()"
    raise NotExtractable(f"graph input {source} is not a tensor, size, stride or offset")


def _dispatch_test(key: list[Any], names: list[str]) -> str:
    tests = []
    for entry, name in zip(key, names, strict=False):
        if entry[0] == "tensor":
            tests.append(f"{name}.dim() == {entry[1]} and {name}.dtype == {entry[2]}")
        elif entry[1] is not None:
            tests.append(f"{name} == {entry[1]}")
    return " and ".join(tests) or "True"


def rewrite(captured: dict[str, Any]) -> str:
    """Candidate source from inductor_capture's JSON (raises NotExtractable)."""
    device = captured["device"]
    state = captured["state"]
    library = [op.split(".")[-1] for op in captured.get("library_ops", [])]
    registry = _Kernels(device)
    functions: list[str] = []
    branches: list[str] = []
    overflow = False
    n_inputs = len(captured["variants"][0]["key"]) if captured["variants"] else 0
    try:
        names = forward_names(captured["forward_params"], n_inputs)
    except SignatureError as exc:
        raise NotExtractable(str(exc)) from exc
    tensor_names = (
        [n for n, k in zip(names, captured["variants"][0]["key"], strict=False) if k[0] == "tensor"]
        if names
        else []
    )
    device_expr = f"{tensor_names[0]}.device" if tensor_names else "next(self.parameters()).device"
    multi = len(captured["variants"]) > 1
    for i, variant in enumerate(captured["variants"]):
        suffix = f"_v{i}" if multi else ""
        fn = _call_function(variant["wrapper"])
        transformer = _CallBody(variant["kernels"], registry, suffix, library)
        new_fn = transformer.visit(fn)
        overflow |= transformer.uses_overflow_grid
        new_fn.name = f"_call{suffix or '_v0'}"
        new_fn.args = ast.arguments(
            posonlyargs=[],
            args=[ast.arg("args"), ast.arg("device")],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        )
        new_fn.decorator_list = []
        new_fn.body = [s for s in new_fn.body if s is not None] or [ast.Pass()]
        ast.fix_missing_locations(new_fn)
        _check_calls(new_fn, set(registry.sources.values()), set(library))
        functions.append(ast.unparse(new_fn))
        args = ", ".join(_input_expr(p["source"], state, names) for p in variant["placeholders"])
        result = f"{new_fn.name}([{args}], {device_expr})"
        out = {"tensor": f"{result}[0]", "tuple": f"tuple({result})", "list": f"list({result})"}[
            captured["output"]
        ]
        branches += [f"if {_dispatch_test(variant['key'], names)}:", f"    return {out}"]
    if not registry.text:
        raise NotExtractable(
            "Inductor generated no Triton kernel for this task (only library calls or views)"
        )

    expected = "; ".join(
        " and ".join(
            f"{n}: {k[2].replace('torch.', '')} rank {k[1]}" if k[0] == "tensor" else f"{n}={k[1]}"
            for n, k in zip(names, v["key"], strict=False)
        )
        for v in captured["variants"]
    )
    body = [
        *branches,
        f"raise ValueError({'no kernels for these inputs; extracted for ' + expected!r})",
    ]
    parts = [HEADER]
    if registry.uses_libdevice:
        parts.append("from triton.language.extra import libdevice\n")
    parts.append(RUNTIME + STATE_HELPER)
    if overflow:
        parts.append(YZ_OVERFLOW)
    if registry.helpers:
        parts.append("\n\n" + helper_sources(registry.helpers))
    parts.append("\n\n" + "\n\n\n".join(registry.text) + "\n")
    parts.append("\n\n" + "\n\n\n".join(functions) + "\n")
    parts.append(model_class(captured["init_params"], captured["forward_params"], state, body))
    source = "".join(parts)
    ast.parse(source)
    return source
