"""Library call, elementwise chain, then a reduction over its trailing dimensions, in one kernel
after the GEMM or convolution: `sigmoid(x @ W^T + b).sum(1)`, `gelu(conv(x)).mean((2, 3))`,
`logsumexp(clamp(2 (x W^T + b)), 1)` and the elementwise ops on the reduced value after it.

Eager PyTorch writes the full library output once per elementwise op and reads it again to
reduce; here each program reduces one row of the output (the reduced trailing dimensions,
contiguous in the library's output) and writes one value.
"""

from __future__ import annotations

import math
from typing import Any

from kernelevo.offline.templates.common import (
    Emitter,
    Graph,
    indent,
    is_elementwise,
    model_class,
    refs,
)
from kernelevo.offline.templates.library_epilogue import (
    LIBRARY_OPS,
    PREP_OPS,
    _broadcastable,
    library_prelude,
    operands,
    with_header,
)

NAME = "library_reduction"
REDUCTIONS = {
    "aten.sum.dim_IntList": "sum",
    "aten.mean.dim": "mean",
    "aten.amax.default": "max",
    "aten.amin.default": "min",
    "aten.logsumexp.default": "logsumexp",
}
SQUEEZES = {
    "aten.squeeze.dim",
    "aten.squeeze.dims",
    "aten.view.default",
    "aten.reshape.default",
    "aten._unsafe_view.default",
}
NEUTRAL = {
    "sum": "0.0",
    "mean": "0.0",
    "max": 'float("-inf")',
    "min": 'float("inf")',
    "logsumexp": 'float("-inf")',
}


def match(graph: Graph) -> dict[str, Any] | None:
    outputs = graph.output_names()
    if graph.data.get("strict") or len(outputs) != 1 or outputs[0] not in graph.nodes:
        return None
    libs = [n for n in graph.order if graph.nodes[n]["target"] in LIBRARY_OPS]
    reds = [n for n in graph.order if graph.nodes[n]["target"] in REDUCTIONS]
    if len(libs) != 1 or len(reds) != 1:
        return None
    lib, red = libs[0], reds[0]
    at, rat = graph.order.index(lib), graph.order.index(red)
    prep, pre, post = graph.order[:at], graph.order[at + 1 : rat], graph.order[rat + 1 :]
    if rat < at or not all(graph.nodes[n]["target"] in PREP_OPS for n in prep):
        return None
    full = graph.shape(lib)
    node = graph.nodes[red]
    dims = (
        sorted({d % len(full) for d in node["args"][1]}) if len(node["args"]) > 1 and full else []
    )
    lead = len(full) - len(dims)
    if not dims or dims != list(range(lead, len(full))) or lead == 0:
        return None  # only a block of trailing dimensions is contiguous in the library's output
    source = refs(node["args"][0])[0]
    if (pre and source != pre[-1]) or (not pre and source != lib):
        return None
    for name in pre:
        if not is_elementwise(graph, name) or not _broadcastable(graph.shape(name), full):
            return None
        for r in refs(graph.nodes[name]["args"]) + refs(graph.nodes[name]["kwargs"]):
            p = graph.placeholders.get(r)
            if r in prep or (
                p is not None and (p["shape"] is None or not _broadcastable(p["shape"], full))
            ):
                return None
    reduced = graph.shape(red)
    for name in post:
        target = graph.nodes[name]["target"]
        if target in SQUEEZES:
            if name != outputs[0] and graph.nodes[graph.users(name)[0]]["target"] not in SQUEEZES:
                return None  # views only at the end
            continue
        if not is_elementwise(graph, name) or math.prod(graph.shape(name)) != math.prod(reduced):
            return None
        if any(
            r in graph.placeholders
            for r in refs(graph.nodes[name]["args"]) + refs(graph.nodes[name]["kwargs"])
        ):
            return None  # after the reduction only the reduced value and literals
    out_shape = graph.shape(outputs[0])
    if out_shape[:lead] != full[:lead] or math.prod(out_shape[lead:]) != 1:
        return None
    return {
        "lib": lib,
        "red": red,
        "kind": REDUCTIONS[node["target"]],
        "pre": pre,
        "post": post,
        "full": full,
        "lead": lead,
        "output": outputs[0],
        "out_tail": out_shape[lead:],
    }


def generate(graph: Graph, params: dict[str, Any]) -> list[tuple[str, str]]:
    kind, lead = params["kind"], params["lead"]
    plan = operands(graph, params["pre"], params["full"])
    env = {params["lib"]: "v_lib", **{r: f"v_{r}" for r in plan.names}}
    pre = Emitter(graph, env)
    value = pre.emit_all(params["pre"]) if params["pre"] else "v_lib"
    body = [
        "row = tl.program_id(0).to(tl.int64)",
        "lanes = tl.arange(0, BLOCK)",
        f"acc = tl.full([BLOCK], {NEUTRAL[kind]}, tl.float32)",
    ]
    if kind == "logsumexp":
        body.append("tot = tl.zeros([BLOCK], tl.float32)")
    loop = [
        "cols = c0 + lanes",
        "mask = cols < n_cols",
        "offs = row * n_cols + cols",
        "v_lib = tl.load(y_ptr + offs, mask=mask, other=0).to(tl.float32)",
    ]
    loop += plan.index_lines + plan.load_lines + pre.lines
    loop.append(f"val = tl.where(mask, {value}, {NEUTRAL[kind]})")
    if kind in ("sum", "mean"):
        loop.append("acc = acc + val")
    elif kind in ("max", "min"):
        loop.append(f"acc = tl.{'maximum' if kind == 'max' else 'minimum'}(acc, val)")
    else:  # per lane, online: a running maximum and the sum of exponentials relative to it
        loop += [
            "m_new = tl.maximum(acc, val)",
            "safe = tl.where(m_new == float('-inf'), 0.0, m_new)",
            "tot = tot * tl.exp(acc - safe) + tl.exp(val - safe)",
            "acc = m_new",
        ]
    body += ["for c0 in range(0, n_cols, BLOCK):"] + ["    " + line for line in loop]
    final = {
        "sum": "tl.sum(acc, 0)",
        "mean": "tl.sum(acc, 0) / n_cols",
        "max": "tl.max(acc, 0)",
        "min": "tl.min(acc, 0)",
    }
    if kind == "logsumexp":
        body += [
            "top = tl.max(acc, 0)",
            "safe_top = tl.where(top == float('-inf'), 0.0, top)",
            "r = safe_top + tl.log(tl.sum(tot * tl.exp(acc - safe_top), 0))",
        ]
    else:
        body.append(f"r = {final[kind]}")
    post = Emitter(graph, {params["red"]: "r"})
    for name in params["post"]:
        if graph.nodes[name]["target"] in SQUEEZES:
            post.env[name] = post.env[refs(graph.nodes[name]["args"][0])[0]]
        else:
            post.emit(name)
    result = post.env[params["output"]]
    body += [*post.lines, f"tl.store(out_ptr + row, ({result}).to(out_ptr.dtype.element_ty))"]
    signature = ", ".join(["y_ptr", "out_ptr", "n_cols", *plan.kernel_args])
    kernel = f"\n\n@triton.jit\ndef library_reduction_kernel({signature}, BLOCK: tl.constexpr):\n{indent(body, 4)}\n"

    forward, rows = library_prelude(graph, params["lib"])
    # a linear layer's leading dimensions come back in front of the reduced ones
    lead_shape = f"(*{rows}.shape[:-1],)" if rows else f"tuple(y.shape[:{lead}])"
    tail = tuple(params["out_tail"])
    out_dtype = graph.get(params["output"])["dtype"]
    forward += plan.forward_lines
    forward += [
        f"n_cols = math.prod(y.shape[{lead}:])",
        "n_rows = y.numel() // max(n_cols, 1)",
        f"out = torch.empty(n_rows, dtype={out_dtype}, device=y.device)",
        "if n_rows == 0 or n_cols == 0:",
        "    raise ValueError('an empty reduction: ' + str(tuple(y.shape)))",
        "library_reduction_kernel[(n_rows,)](",
        f"    {', '.join(['y', 'out', 'n_cols', *plan.call_args])}, BLOCK=1024, num_warps=4)",
        f"return out.reshape({lead_shape} + {tail!r})",
    ]
    return [(NAME, with_header(NAME) + kernel + model_class(graph.data, forward))]
