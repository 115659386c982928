"""Row reductions over the last dimension: sum / mean / max / min of an elementwise prologue,
and cross-entropy (log-softmax + NLL with mean, sum or no reduction) without materialising
the log-probabilities. The final mean over rows is a second, single-program kernel, so no
library op runs.
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
    refs,
    value_of,
)

ROW, CE = "row_reduction", "cross_entropy"
REDUCERS = {  # target -> (identity, combine, finish)
    "aten.sum.dim_IntList": ("0.0", "acc + v", "tl.sum(acc, axis=0)"),
    "aten.mean.dim": ("0.0", "acc + v", "tl.sum(acc, axis=0) / n_cols"),
    "aten.amax.default": ("float('-inf')", "tl.maximum(acc, v)", "tl.max(acc, axis=0)"),
    "aten.amin.default": ("float('inf')", "tl.minimum(acc, v)", "tl.min(acc, axis=0)"),
}


def _match_row(graph: Graph) -> dict[str, Any] | None:
    out = graph.nodes.get(graph.output_names()[0])
    if out is None or out["target"] not in REDUCERS or not refs(out["args"][0]):
        return None
    source = refs(out["args"][0])[0]
    full = graph.shape(source)
    dims = out["args"][1] if len(out["args"]) > 1 else None
    if not full or dims not in ([-1], [len(full) - 1]):
        return None
    if out["kwargs"].get("dtype") not in (None, {"dtype": "torch.float32"}):
        return None
    keepdim = (
        bool(out["args"][2]) if len(out["args"]) > 2 else bool(out["kwargs"].get("keepdim", False))
    )
    prologue = [n for n in graph.order if n != out["name"]]
    if not all(is_elementwise(graph, n) and broadcasts(graph, n, full) for n in prologue):
        return None
    return {
        "kind": ROW,
        "output": out["name"],
        "source": source,
        "prologue": prologue,
        "full": full,
        "keepdim": keepdim,
        "reducer": out["target"],
    }


def _match_ce(graph: Graph) -> dict[str, Any] | None:
    out_name = graph.output_names()[0]
    nll = graph.nodes.get(graph.resolve(out_name))
    if nll is None or nll["target"] != "aten.nll_loss_forward.default" or out_name == nll["name"]:
        return None
    ls = graph.nodes.get(refs(nll["args"][0])[0]) if refs(nll["args"][0]) else None
    if ls is None or ls["target"] != "aten._log_softmax.default" or ls["args"][2]:
        return None
    x = graph.placeholders.get(refs(ls["args"][0])[0]) if refs(ls["args"][0]) else None
    t = graph.placeholders.get(refs(nll["args"][1])[0]) if refs(nll["args"][1]) else None
    if (
        x is None
        or t is None
        or x["kind"] != "input"
        or t["kind"] != "input"
        or len(x["shape"]) != 2
    ):
        return None
    if ls["args"][1] not in (-1, 1) or t["shape"] != x["shape"][:1] or t["dtype"] != "torch.int64":
        return None
    if nll["args"][2] is not None or nll["args"][3] not in (0, 1, 2):
        return None
    extra = [
        n
        for n in graph.order
        if n not in (nll["name"], ls["name"])
        and not (
            graph.nodes[n]["target"] == "getitem"
            and refs(graph.nodes[n]["args"][0]) == [nll["name"]]
        )
    ]
    if extra:
        return None
    return {
        "kind": CE,
        "x": x,
        "target": t,
        "reduction": nll["args"][3],
        "ignore_index": int(nll["args"][4]),
        "dtype": graph.nodes[out_name]["dtype"],
    }


def match(graph: Graph) -> dict[str, Any] | None:
    if len(graph.output_names()) != 1:
        return None
    return _match_ce(graph) or _match_row(graph)


def _generate_row(graph: Graph, params: dict[str, Any]) -> list[tuple[str, str]]:
    full = params["full"]
    leaves = prologue_leaves(graph, params["prologue"] + [params["output"]], full)
    main = main_input(graph, leaves)
    emitter = Emitter(graph, {leaf.name: f"v_{leaf.name}" for leaf in leaves}, full)
    emitter.emit_all(params["prologue"])
    identity, combine, finish = REDUCERS[params["reducer"]]
    chunk = ["cols = start + tl.arange(0, BLOCK_SIZE)", "mask = cols < n_cols"]
    if emitter.uses_causal:
        chunk += ["_col = cols", "_qrow = row % n_q"]
    chunk += load_lines(leaves, {"full": "base + cols", "row": "cols"}, "mask") + emitter.lines
    chunk += [
        f"v = tl.where(mask, {emitter.env[params['source']]}, {identity})",
        f"acc = {combine}",
    ]
    body = [
        "row = tl.program_id(0)",
        "base = row.to(tl.int64) * n_cols",
        f"acc = tl.full([BLOCK_SIZE], {identity}, tl.float32)",
        "for start in range(0, n_cols, BLOCK_SIZE):",
    ]
    body += ["    " + line for line in chunk]
    body += [f"tl.store(out_ptr + row, ({finish}).to(out_ptr.dtype.element_ty))"]
    ptrs = ", ".join(leaf.ptr for leaf in leaves)
    kernel = (
        f"\n\n@triton.jit\ndef row_reduce_kernel(out_ptr, {ptrs}, n_cols, n_q, BLOCK_SIZE: "
        f"tl.constexpr):\n{indent(body, 4)}\n"
    )
    x = leaf_var(main)
    out_dtype = graph.get(params["output"])["dtype"]
    dtype = f"{x}.dtype" if out_dtype == graph.placeholders[main.name]["dtype"] else out_dtype
    shape = f"{x}.shape[:-1] + (1,)" if params["keepdim"] else f"{x}.shape[:-1]"
    forward = [
        *operand_checks(x, leaves),
        f"n_cols = {x}.shape[-1]",
        f"out = torch.empty({shape}, dtype={dtype}, device={x}.device)",
        "n_rows = out.numel()",
        "if n_rows == 0:",
        "    return out",
        f"n_q = {x}.shape[-2] if {x}.dim() > 1 else 1",
        f"row_reduce_kernel[(n_rows,)](out, {', '.join(leaf_var(leaf) for leaf in leaves)}, n_cols, n_q, "
        "BLOCK_SIZE=1024, num_warps=4)",
        "return out",
    ]
    return [(ROW, HEADER.format(template=ROW) + kernel + model_class(graph.data, forward))]


CE_ROW = """

@triton.jit
def cross_entropy_row_kernel(loss_ptr, valid_ptr, x_ptr, t_ptr, n_cols, ignore_index, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * n_cols
    m_acc = tl.full([BLOCK_SIZE], float("-inf"), tl.float32)
    s_acc = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_ptr + base + cols, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m_acc, x)
        live = m_new > float("-inf")
        s_acc = tl.where(live, s_acc * tl.exp(m_acc - m_new) + tl.exp(x - m_new), 0.0)
        m_acc = m_new
    m_row = tl.max(m_acc, axis=0)
    s_row = tl.sum(tl.where(m_acc > float("-inf"), s_acc * tl.exp(m_acc - m_row), 0.0), axis=0)
    target = tl.load(t_ptr + row)
    valid = target != ignore_index
    safe = tl.where(valid & (target >= 0) & (target < n_cols), target, 0)
    x_t = tl.load(x_ptr + base + safe).to(tl.float32)
    loss = tl.where(valid, m_row + tl.log(s_row) - x_t, 0.0)
    tl.store(loss_ptr + row, loss.to(loss_ptr.dtype.element_ty))
    tl.store(valid_ptr + row, valid.to(tl.float32))
"""

CE_MEAN = """

@triton.jit
def mean_kernel(out_ptr, loss_ptr, valid_ptr, n_rows, DIVIDE: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    total = tl.zeros([BLOCK_SIZE], tl.float32)
    count = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, n_rows, BLOCK_SIZE):
        idx = start + tl.arange(0, BLOCK_SIZE)
        mask = idx < n_rows
        total += tl.load(loss_ptr + idx, mask=mask, other=0.0)
        count += tl.load(valid_ptr + idx, mask=mask, other=0.0)
    result = tl.sum(total, axis=0)
    if DIVIDE:
        result = result / tl.sum(count, axis=0)
    tl.store(out_ptr, result.to(out_ptr.dtype.element_ty))
"""


def _generate_ce(graph: Graph, params: dict[str, Any]) -> list[tuple[str, str]]:
    x, t = value_of(graph.data, params["x"]), value_of(graph.data, params["target"])
    forward = [
        f"x = {x}.contiguous()",
        f"t = {t}.contiguous()",
        "n_rows, n_cols = x.shape",
        f"loss = torch.empty((n_rows,), dtype={'x.dtype' if params['reduction'] == 0 else 'torch.float32'}, "
        "device=x.device)",
        "valid = torch.empty((n_rows,), dtype=torch.float32, device=x.device)",
        f"cross_entropy_row_kernel[(n_rows,)](loss, valid, x, t, n_cols, {params['ignore_index']}, "
        "BLOCK_SIZE=1024, num_warps=4)",
    ]
    kernels = CE_ROW
    if params["reduction"] == 0:
        forward.append("return loss")
    else:
        kernels += CE_MEAN
        forward += [
            "out = torch.empty((), dtype=x.dtype, device=x.device)",
            f"mean_kernel[(1,)](out, loss, valid, n_rows, DIVIDE={params['reduction'] == 1}, BLOCK_SIZE=1024, "
            "num_warps=4)",
            "return out",
        ]
    return [(CE, HEADER.format(template=CE) + kernels + model_class(graph.data, forward))]


def generate(graph: Graph, params: dict[str, Any]) -> list[tuple[str, str]]:
    return _generate_ce(graph, params) if params["kind"] == CE else _generate_row(graph, params)
