"""Library call plus one fused epilogue: keep cuBLAS/cuDNN for the GEMM or convolution and do
every op after it in a single Triton pass over its output.

Most model blocks (and most of KernelBench Level 2) are a matrix product or convolution
followed by a chain of elementwise ops; eager PyTorch reads and writes the whole output once
per op. The library call stays (its kernels are hard to beat), the chain becomes one kernel
generated from the traced graph, reading each other operand (bias, scale, residual) through
its broadcast strides and writing the result in place over the library's output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kernelevo.offline.templates.common import (
    HEADER,
    Emitter,
    Graph,
    Unsupported,
    indent,
    is_elementwise,
    literal,
    model_class,
    refs,
    value_of,
)

NAME = "library_epilogue"
LIBRARY_OPS = (
    "aten.convolution.default",
    "aten.addmm.default",
    "aten.mm.default",
    "aten.bmm.default",
)
PREP_OPS = (
    "aten.t.default",
    "aten.permute.default",
    "aten.view.default",
    "aten.reshape.default",
    "aten._unsafe_view.default",
)


def _broadcastable(shape: list[int], full: list[int]) -> bool:
    if len(shape) > len(full):
        return False
    return all(s in (1, f) for s, f in zip(reversed(shape), reversed(full), strict=False))


def match(graph: Graph) -> dict[str, Any] | None:
    outputs = graph.output_names()
    if graph.data.get("strict") or len(outputs) != 1 or outputs[0] not in graph.nodes:
        return None  # a STRICT task refuses every library GEMM and convolution
    libs = [n for n in graph.order if graph.nodes[n]["target"] in LIBRARY_OPS]
    if len(libs) != 1:
        return None
    lib = libs[0]
    at = graph.order.index(lib)
    prep, after = graph.order[:at], graph.order[at + 1 :]
    if not after or not all(graph.nodes[n]["target"] in PREP_OPS for n in prep):
        return None
    full = graph.shape(lib)
    if graph.shape(outputs[0]) != full or outputs[0] not in after:
        return None
    for name in after:
        node = graph.nodes[name]
        if not is_elementwise(graph, name) or node["target"] in (
            "aten.ones.default",
            "aten.triu.default",
            "aten.tril.default",
        ):
            return None
        if not _broadcastable(node["shape"] or [], full):
            return None
        for r in refs(node["args"]) + refs(node["kwargs"]):
            if r in prep:
                return None
            p = graph.placeholders.get(r)
            if p is not None and (p["shape"] is None or not _broadcastable(p["shape"], full)):
                return None
    return {"lib": lib, "prep": prep, "after": after, "output": outputs[0], "full": full}


def _ints(value: Any) -> str:
    if not isinstance(value, list) or not all(type(v) is int for v in value):
        raise Unsupported(f"convolution argument {value!r} is not a list of integers")
    return repr(tuple(value))


def _expr(graph: Graph, value: Any) -> str:
    """Python expression (inside ModelNew.forward) for a library call's operand."""
    if value is None:
        return "None"
    if isinstance(value, dict) and "rows" in value:
        return f"{value['rows']}.reshape(-1, {value['rows']}.shape[-1])"
    names = refs(value)
    if not isinstance(value, dict) or len(names) != 1:
        raise Unsupported(f"library operand {value!r}")
    name = names[0]
    if name in graph.placeholders:
        return value_of(graph.data, graph.placeholders[name])
    node = graph.nodes[name]
    inner = _expr(graph, node["args"][0])
    if node["target"] == "aten.t.default":
        return f"{inner}.t()"
    if node["target"] == "aten.permute.default":
        return f"{inner}.permute({_ints(node['args'][1])})"
    source = graph.get(refs(node["args"][0])[0])["shape"] or []
    if len(node["args"][1]) == 2 and len(source) > 2 and node["args"][1][-1] == source[-1]:
        return (
            f"{inner}.reshape(-1, {inner}.shape[-1])"  # rows of a linear layer, any leading shape
        )
    raise Unsupported(f"{node['target']} to {node['args'][1]} before the library call")


def _rows_input(graph: Graph, name: str) -> dict[str, Any] | None:
    """The input placeholder a linear layer multiplies (addmm/mm's first matrix), if it is one."""
    node = graph.nodes[name]
    value = node["args"][1 if node["target"] == "aten.addmm.default" else 0]
    p = graph.placeholders.get(refs(value)[0]) if refs(value) else None
    return (
        p
        if node["target"] in ("aten.addmm.default", "aten.mm.default")
        and p
        and p["kind"] == "input"
        else None
    )


def library_call(graph: Graph, name: str, rows: str | None = None) -> str:
    """The library call as Python; `rows`: the variable holding a linear layer's input, which is
    multiplied as (-1, K) rows whatever its leading dimensions."""
    node = graph.nodes[name]
    a = list(node["args"])
    target = node["target"]
    if rows is not None:
        a[1 if target == "aten.addmm.default" else 0] = {"rows": rows}
    if target == "aten.convolution.default":
        stride, padding, dilation, transposed, output_padding, groups = a[3:9]
        return (
            f"torch.convolution({_expr(graph, a[0])}, {_expr(graph, a[1])}, {_expr(graph, a[2])}, "
            f"{_ints(stride)}, {_ints(padding)}, {_ints(dilation)}, {bool(transposed)}, "
            f"{_ints(output_padding)}, {int(groups)})"
        )
    if target == "aten.addmm.default":
        extra = "".join(
            f", {k}={literal(node['kwargs'][k])}" for k in ("beta", "alpha") if k in node["kwargs"]
        )
        return (
            f"torch.addmm({_expr(graph, a[0])}, {_expr(graph, a[1])}, {_expr(graph, a[2])}{extra})"
        )
    fn = "torch.mm" if target == "aten.mm.default" else "torch.bmm"
    return f"{fn}({_expr(graph, a[0])}, {_expr(graph, a[1])})"


@dataclass
class Operands:
    """How the kernel reads the chain's other operands (bias, scale, residual) at linear offset
    `offs` of the library output y: loads, index lines, and what forward passes for them."""

    names: list[str] = field(default_factory=list)
    index_lines: list[str] = field(default_factory=list)  # i<d> for the dims some operand needs
    load_lines: list[str] = field(default_factory=list)
    kernel_args: list[str] = field(default_factory=list)  # pointers, then integers
    forward_lines: list[str] = field(default_factory=list)
    call_args: list[str] = field(default_factory=list)


def operands(graph: Graph, chain: list[str], full: list[int], mask: str = "mask") -> Operands:
    rank = len(full)
    found: list[
        tuple[str, str, list[int]]
    ] = []  # (placeholder, kind "full"|"scalar"|"strided", dims)
    for name in chain:
        for r in refs(graph.nodes[name]["args"]) + refs(graph.nodes[name]["kwargs"]):
            if r in graph.placeholders and r not in [o[0] for o in found]:
                shape = [1] * (rank - len(graph.placeholders[r]["shape"])) + graph.placeholders[r][
                    "shape"
                ]
                dims = [d for d in range(rank) if shape[d] != 1]
                kind = "scalar" if math.prod(shape) == 1 else "full" if shape == full else "strided"
                found.append((r, kind, dims))
    plan = Operands(names=[r for r, _, _ in found])
    needed = sorted({d for _, kind, dims in found if kind == "strided" for d in dims})
    for d in needed:
        index = "offs" if d == rank - 1 else f"(offs // inner{d})"
        plan.index_lines.append(f"i{d} = {index} % size{d}" if d > 0 else f"i{d} = {index}")
    ints = [
        a for d in needed for a in ((f"size{d}", f"inner{d}") if d < rank - 1 else (f"size{d}",))
    ]
    ints_given = [
        a
        for d in needed
        for a in (
            (f"y.shape[{d}]", f"math.prod(y.shape[{d + 1}:])")
            if d < rank - 1
            else (f"y.shape[{d}]",)
        )
    ]
    ptrs, strides, strides_given = [], [], []
    for k, (r, kind, dims) in enumerate(found):
        ptrs.append(f"e{k}_ptr")
        expr = value_of(graph.data, graph.placeholders[r])
        if kind == "scalar":
            plan.load_lines.append(f"v_{r} = tl.load(e{k}_ptr).to(tl.float32)")
            plan.forward_lines.append(f"e{k} = {expr}")
        elif kind == "full":
            plan.load_lines.append(
                f"v_{r} = tl.load(e{k}_ptr + offs, mask={mask}, other=0).to(tl.float32)"
            )
            plan.forward_lines += [
                f"e{k} = {expr}.contiguous()",
                f"if e{k}.numel() != y.numel():",
                f"    raise ValueError('operand shape ' + str(tuple(e{k}.shape)) + ' differs from ' "
                "+ str(tuple(y.shape)))",
            ]
        else:
            offset = " + ".join(f"i{d} * e{k}_s{d}" for d in dims)
            plan.load_lines.append(
                f"v_{r} = tl.load(e{k}_ptr + {offset}, mask={mask}, other=0).to(tl.float32)"
            )
            plan.forward_lines.append(
                f"e{k} = torch.broadcast_to({expr}, y.shape)"
            )  # a view: stride 0 where broadcast
            strides += [f"e{k}_s{d}" for d in dims]
            strides_given += [f"e{k}.stride({d})" for d in dims]
    plan.kernel_args = ptrs + ints + strides
    plan.call_args = [f"e{k}" for k in range(len(found))] + ints_given + strides_given
    return plan


def library_prelude(graph: Graph, lib: str) -> tuple[list[str], str | None]:
    """Forward lines computing y (the library call, contiguous); the linear layer's input variable."""
    rows = _rows_input(graph, lib)
    forward = [f"xin = {value_of(graph.data, rows)}"] if rows else []
    forward.append(f"y = {library_call(graph, lib, 'xin' if rows else None)}.contiguous()")
    return forward, ("xin" if rows else None)


def generate(graph: Graph, params: dict[str, Any]) -> list[tuple[str, str]]:
    plan = operands(graph, params["after"], params["full"])
    emitter = Emitter(graph, {params["lib"]: "v_lib", **{r: f"v_{r}" for r in plan.names}})
    result = emitter.emit_all(params["after"])
    body = [
        "pid = tl.program_id(0)",
        "offs = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
        "mask = offs < n_elements",
        "v_lib = tl.load(y_ptr + offs, mask=mask, other=0).to(tl.float32)",
    ]
    body += plan.index_lines + plan.load_lines + emitter.lines
    body.append(f"tl.store(out_ptr + offs, ({result}).to(out_ptr.dtype.element_ty), mask=mask)")
    signature = ", ".join(["y_ptr", "out_ptr", "n_elements", *plan.kernel_args])
    kernel = (
        f"\n\n@triton.jit\ndef library_epilogue_kernel({signature}, BLOCK_SIZE: tl.constexpr):\n"
        f"{indent(body, 4)}\n"
    )

    forward, rows = library_prelude(graph, params["lib"])
    out_dtype = graph.get(params["output"])["dtype"]
    if out_dtype == graph.get(params["lib"])["dtype"]:
        forward.append(
            "out = y"
        )  # in place: each element is read before it is written, by the same program
    else:
        forward.append(f"out = torch.empty(y.shape, dtype={out_dtype}, device=y.device)")
    forward += plan.forward_lines
    result_expr = f"out.reshape(*{rows}.shape[:-1], out.shape[-1])" if rows else "out"
    forward += [
        "n = y.numel()",
        "if n == 0:",
        f"    return {result_expr}",
        "library_epilogue_kernel[lambda meta: (triton.cdiv(n, meta['BLOCK_SIZE']),)](",
        f"    {', '.join(['y', 'out', 'n', *plan.call_args])}, BLOCK_SIZE=1024, num_warps=4)",
        f"return {result_expr}",
    ]
    return [(NAME, with_header(NAME) + kernel + model_class(graph.data, forward))]


def with_header(template: str) -> str:
    return HEADER.format(template=template).replace(
        "import torch\n", "import math\n\nimport torch\n", 1
    )
