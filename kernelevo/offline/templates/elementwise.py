"""Fused elementwise chain: every op of the reference in one pass over memory.

Matches a graph made only of elementwise ops whose operands are tensors of the output's
shape, per-channel vectors over the last dimension, or scalars (plus causal masks built
from `ones(...).triu()`). The kernel body is generated from the op sequence.
"""

from __future__ import annotations

from typing import Any

from kernelevo.offline.templates.common import (
    HEADER,
    Emitter,
    Graph,
    broadcasts,
    indent,
    is_elementwise,
    leaf_var,
    load_lines,
    main_input,
    model_class,
    operand_checks,
    prologue_leaves,
)

NAME = "fused_elementwise"


def match(graph: Graph) -> dict[str, Any] | None:
    outputs = graph.output_names()
    if len(outputs) != 1 or outputs[0] not in graph.nodes:
        return None
    if not graph.order or not all(is_elementwise(graph, n) for n in graph.order):
        return None
    full = graph.shape(outputs[0])
    for n in graph.order:
        if not broadcasts(graph, n, full):
            return None
    return {"output": outputs[0], "full": full}


def generate(graph: Graph, params: dict[str, Any]) -> list[tuple[str, str]]:
    full = params["full"]
    leaves = prologue_leaves(graph, graph.order, full)
    main = main_input(graph, leaves)
    emitter = Emitter(graph, {leaf.name: f"v_{leaf.name}" for leaf in leaves}, full)
    result = emitter.emit_all(graph.order)
    body = [
        "pid = tl.program_id(0)",
        "offs = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
        "mask = offs < n_elements",
    ]
    if emitter.uses_causal:
        body += ["_col = offs % n_cols", "_qrow = (offs // n_cols) % n_q"]
    body += load_lines(leaves, {"full": "offs", "row": "offs % n_cols"}, "mask")
    body += emitter.lines
    body.append(f"tl.store(out_ptr + offs, {result}.to(out_ptr.dtype.element_ty), mask=mask)")
    ptrs = ", ".join(leaf.ptr for leaf in leaves)
    kernel = (
        f"\n\n@triton.jit\ndef fused_elementwise_kernel(out_ptr, {ptrs}, n_elements, n_cols, n_q, "
        f"BLOCK_SIZE: tl.constexpr):\n{indent(body, 4)}\n"
    )

    x = leaf_var(main)
    out_dtype = graph.get(params["output"])["dtype"]
    dtype = f"{x}.dtype" if out_dtype == graph.placeholders[main.name]["dtype"] else out_dtype
    forward = [
        *operand_checks(x, leaves),
        f"out = torch.empty({x}.shape, dtype={dtype}, device={x}.device)",
        "n = out.numel()",
        "if n == 0:",
        "    return out",
        f"n_cols = {x}.shape[-1] if {x}.dim() > 0 else 1",
        f"n_q = {x}.shape[-2] if {x}.dim() > 1 else 1",
        "fused_elementwise_kernel[lambda meta: (triton.cdiv(n, meta['BLOCK_SIZE']),)](",
        f"    out, {', '.join(leaf_var(leaf) for leaf in leaves)}, n, n_cols, n_q, BLOCK_SIZE=1024, num_warps=4)",
        "return out",
    ]
    source = HEADER.format(template=NAME) + kernel + model_class(graph.data, forward)
    return [(NAME, source)]
