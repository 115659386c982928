"""Inductor's wrapper `call()` rewritten into a candidate function that allocates and launches.

Allocations, views and extern kernels become plain torch calls (only the library ops the task
allows), kernel launches get literal configs and a grid, and anything else the wrapper calls
is refused with the reason.
"""

from __future__ import annotations

import ast
from typing import Any

from kernelevo.ast_names import dotted_name
from kernelevo.offline.inductor_kernels import KernelSources, NotExtractable

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


def launch_config(info: dict[str, Any]) -> dict[str, Any]:
    """The configuration Inductor's benchmark kept on the task's inputs (a capture on a GPU),
    else the first it listed (on the CPU, or where the benchmark could not be read)."""
    chosen = info.get("chosen")
    return chosen if isinstance(chosen, dict) else info["configs"][0]


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


YZ_OVERFLOW_GRID = """

def _yz_overflow_grid(x, y):
    z = -(-y // 65535)
    return (x, 0 if z == 0 else -(-y // z), z)
"""


class CallRewriter(ast.NodeTransformer):
    """Rewrites one `call(args)` function of Inductor's wrapper into `_call_vN(args, device)`."""

    def __init__(
        self,
        kernels: dict[str, dict[str, Any]],
        registry: KernelSources,
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
                if not _literal_sizes(node.value):
                    node.value.keywords.append(ast.keyword("symbolic", ast.Constant(True)))
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
        config = launch_config(info)
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


def _literal_sizes(call: ast.Call) -> bool:
    """Whether assert_size_stride's sizes are all numbers: then Inductor knew every size and
    chose 32- or 64-bit indexing for it, and no guard on the element count is needed."""
    if len(call.args) < 2 or not isinstance(call.args[1], ast.Tuple):
        return False
    return all(isinstance(e, ast.Constant) and isinstance(e.value, int) for e in call.args[1].elts)


def check_calls(fn: ast.FunctionDef, kernel_names: set[str], library: set[str]) -> None:
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


def call_function(wrapper: str) -> ast.FunctionDef:
    tree = ast.parse(wrapper)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    raise NotExtractable("no call() function in Inductor's output")
