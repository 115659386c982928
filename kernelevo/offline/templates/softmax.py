"""Row softmax / log-softmax over the last dimension, with an optional elementwise prologue
(scaling, bias, causal mask), in two shapes: the whole row in one block (short rows), and an
online (running max and sum) loop over fixed-size chunks (long rows).
"""

from __future__ import annotations

from typing import Any

from kernelevo.offline.templates.common import (
    HEADER,
    ONE_BLOCK_MAX,
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

NAME = "row_softmax"
TARGETS = {"aten._softmax.default": False, "aten._log_softmax.default": True}


def match(graph: Graph) -> dict[str, Any] | None:
    outputs = graph.output_names()
    if len(outputs) != 1:
        return None
    out = graph.nodes.get(outputs[0])
    if out is None or out["target"] not in TARGETS:
        return None
    full = out["shape"]
    dim = out["args"][1]
    if not full or dim not in (-1, len(full) - 1) or out["args"][2]:
        return None
    prologue = [n for n in graph.order if n != outputs[0]]
    if not all(is_elementwise(graph, n) for n in prologue):
        return None
    for n in prologue:
        if not broadcasts(graph, n, full):
            return None
    source = out["args"][0]["n"]
    return {
        "output": outputs[0],
        "source": source,
        "prologue": prologue,
        "full": full,
        "log": TARGETS[out["target"]],
    }


def _prologue(
    graph: Graph, params: dict[str, Any], leaves: list, index_base: str
) -> tuple[list[str], bool]:
    """Loads and prologue ops for one chunk of a row; leaves the softmax input in `s`."""
    emitter = Emitter(graph, {leaf.name: f"v_{leaf.name}" for leaf in leaves}, params["full"])
    lines = load_lines(leaves, {"full": f"{index_base} + cols", "row": "cols"}, "mask")
    emitter.emit_all(params["prologue"])
    value = emitter.env[params["source"]]
    return lines + emitter.lines + [
        f"s = tl.where(mask, {value}, float('-inf'))"
    ], emitter.uses_causal


def generate(graph: Graph, params: dict[str, Any]) -> list[tuple[str, str]]:
    full = params["full"]
    leaves = prologue_leaves(graph, params["prologue"] + [params["output"]], full)
    main = main_input(graph, leaves)
    ptrs = ", ".join(leaf.ptr for leaf in leaves)
    load, causal = _prologue(graph, params, leaves, "base")
    causal_lines = ["_col = cols", "_qrow = row % n_q"] if causal else []
    head = ["row = tl.program_id(0)", "base = row.to(tl.int64) * n_cols"]
    if params["log"]:
        finish = "y = (s - m) - tl.log(tl.sum(e, axis=0))"
        finish_online = "y = (s - m_row) - tl.log(s_row)"
    else:
        finish = "y = e / tl.sum(e, axis=0)"
        finish_online = "y = tl.exp(s - m_row) / s_row"

    single = [
        *head,
        "cols = tl.arange(0, BLOCK_SIZE)",
        "mask = cols < n_cols",
        *causal_lines,
        *load,
        "m = tl.max(s, axis=0)",
        "e = tl.exp(s - m)",
        finish,
        "tl.store(out_ptr + base + cols, y.to(out_ptr.dtype.element_ty), mask=mask)",
    ]
    online = (
        head
        + [
            "m_acc = tl.full([BLOCK_SIZE], float('-inf'), tl.float32)",
            "s_acc = tl.zeros([BLOCK_SIZE], tl.float32)",
            "for start in range(0, n_cols, BLOCK_SIZE):",
            "    cols = start + tl.arange(0, BLOCK_SIZE)",
            "    mask = cols < n_cols",
        ]
        + ["    " + line for line in causal_lines + load]
        + [
            "    m_new = tl.maximum(m_acc, s)",
            "    live = m_new > float('-inf')",
            "    s_acc = tl.where(live, s_acc * tl.exp(m_acc - m_new) + tl.exp(s - m_new), 0.0)",
            "    m_acc = m_new",
            "m_row = tl.max(m_acc, axis=0)",
            "s_row = tl.sum(tl.where(m_acc > float('-inf'), s_acc * tl.exp(m_acc - m_row), 0.0), axis=0)",
            "for start in range(0, n_cols, BLOCK_SIZE):",
            "    cols = start + tl.arange(0, BLOCK_SIZE)",
            "    mask = cols < n_cols",
        ]
        + ["    " + line for line in causal_lines + load]
        + [
            "    " + finish_online,
            "    tl.store(out_ptr + base + cols, y.to(out_ptr.dtype.element_ty), mask=mask)",
        ]
    )
    x = leaf_var(main)
    out_dtype = graph.get(params["output"])["dtype"]
    dtype = f"{x}.dtype" if out_dtype == graph.placeholders[main.name]["dtype"] else out_dtype
    args = ", ".join(leaf_var(leaf) for leaf in leaves)
    prelude = [
        *operand_checks(x, leaves),
        f"out = torch.empty({x}.shape, dtype={dtype}, device={x}.device)",
        f"n_cols = {x}.shape[-1]",
        "n_rows = out.numel() // n_cols if n_cols else 0",
        "if n_rows == 0:",
        "    return out",
        f"n_q = {x}.shape[-2] if {x}.dim() > 1 else 1",
    ]
    sources = []
    variants = (
        (
            NAME,
            single,
            f"softmax_kernel[(n_rows,)](out, {args}, n_cols, n_q, BLOCK_SIZE=triton.next_power_of_2(n_cols), "
            "num_warps=4)",
        ),
        (
            f"{NAME}_online",
            online,
            f"softmax_kernel[(n_rows,)](out, {args}, n_cols, n_q, BLOCK_SIZE=1024, num_warps=4)",
        ),
    )
    for name, body, launch in variants[1:] if full[-1] > ONE_BLOCK_MAX else variants:
        kernel = (
            f"\n\n@triton.jit\ndef softmax_kernel(out_ptr, {ptrs}, n_cols, n_q, BLOCK_SIZE: tl.constexpr):\n"
            f"{indent(body, 4)}\n"
        )
        sources.append(
            (
                name,
                HEADER.format(template=name)
                + kernel
                + model_class(graph.data, [*prelude, launch, "return out"]),
            )
        )
    return sources
