"""RMS norm and layer norm over the last dimension, with optional learned weight (and bias).

RMS norm is recognised from its arithmetic (square, mean over the last dim, + eps, rsqrt,
two multiplies), layer norm from aten.native_layer_norm. Each comes as a one-block-per-row
kernel (short rows) and a chunked two-pass kernel (long rows).
"""

from __future__ import annotations

from typing import Any

from kernelevo.offline.templates.common import (
    HEADER,
    ONE_BLOCK_MAX,
    Graph,
    indent,
    model_class,
    operand_class,
    refs,
    value_of,
)

RMS, LAYER = "rms_norm", "layer_norm"


def _node(graph: Graph, value: Any, *targets: str) -> dict[str, Any] | None:
    names = refs(value)
    if not isinstance(value, dict) or len(names) != 1 or names[0] not in graph.nodes:
        return None
    node = graph.nodes[names[0]]
    return node if node["target"] in targets else None


def _row_param(graph: Graph, value: Any, full: list[int]) -> dict[str, Any] | None:
    names = refs(value)
    if not isinstance(value, dict) or len(names) != 1 or names[0] not in graph.placeholders:
        return None
    p = graph.placeholders[names[0]]
    if p["kind"] == "input" or p["shape"] is None or operand_class(p["shape"], full) != "row":
        return None
    return p


def _input(graph: Graph, value: Any, full: list[int]) -> dict[str, Any] | None:
    names = refs(value)
    if not isinstance(value, dict) or len(names) != 1 or names[0] not in graph.placeholders:
        return None
    p = graph.placeholders[names[0]]
    return p if p["kind"] == "input" and p["shape"] == full else None


def _match_rms(graph: Graph) -> dict[str, Any] | None:
    out = graph.nodes.get(graph.output_names()[0])
    if out is None or not out["shape"]:
        return None
    full = out["shape"]
    weight, y = None, out
    if out["target"] == "aten.mul.Tensor":
        for w, other in ((out["args"][1], out["args"][0]), (out["args"][0], out["args"][1])):
            if _row_param(graph, w, full) is not None and _node(
                graph, other, "aten.mul.Tensor", "aten.div.Tensor"
            ):
                weight, y = (
                    _row_param(graph, w, full),
                    _node(graph, other, "aten.mul.Tensor", "aten.div.Tensor"),
                )
                break
    if y is None:
        return None
    x = inv = None
    if y["target"] == "aten.mul.Tensor":
        for a, b in ((y["args"][0], y["args"][1]), (y["args"][1], y["args"][0])):
            if _input(graph, a, full) and _node(graph, b, "aten.rsqrt.default"):
                x, inv = _input(graph, a, full), _node(graph, b, "aten.rsqrt.default")
    elif y["target"] == "aten.div.Tensor" and _input(graph, y["args"][0], full):
        x, inv = _input(graph, y["args"][0], full), _node(graph, y["args"][1], "aten.sqrt.default")
    if x is None or inv is None:
        return None
    add = _node(graph, inv["args"][0], "aten.add.Tensor", "aten.add.Scalar")
    if (
        add is None
        or not isinstance(add["args"][1], (int, float))
        or add["kwargs"].get("alpha", 1) != 1
    ):
        return None
    mean = _node(graph, add["args"][0], "aten.mean.dim")
    if (
        mean is None
        or mean["args"][1] not in ([-1], [len(full) - 1])
        or not (len(mean["args"]) > 2 and mean["args"][2])
    ):
        return None
    sq = _node(graph, mean["args"][0], "aten.pow.Tensor_Scalar", "aten.mul.Tensor")
    if sq is None or refs(sq["args"][0]) != [x["name"]]:
        return None
    if sq["target"] == "aten.pow.Tensor_Scalar" and sq["args"][1] != 2:
        return None
    if sq["target"] == "aten.mul.Tensor" and refs(sq["args"][1]) != [x["name"]]:
        return None
    used = {out["name"], y["name"], inv["name"], add["name"], mean["name"], sq["name"]}
    if set(graph.order) != used:
        return None
    return {
        "kind": RMS,
        "x": x,
        "weight": weight,
        "bias": None,
        "eps": float(add["args"][1]),
        "full": full,
        "dtype": out["dtype"],
    }


def _match_layer(graph: Graph) -> dict[str, Any] | None:
    out_name = graph.output_names()[0]
    out_node = graph.nodes.get(out_name)
    if out_node is None or out_node["target"] != "getitem" or out_node["args"][1] != 0:
        return None
    node = graph.nodes.get(graph.resolve(out_name))
    if node is None or node["target"] != "aten.native_layer_norm.default":
        return None
    x_val, shape, w_val, b_val, eps = node["args"][:5]
    full = graph.shape(refs(x_val)[0]) if refs(x_val) else []
    x = _input(graph, x_val, full)
    if x is None or len(shape) != 1 or shape[0] != full[-1]:
        return None
    weight = _row_param(graph, w_val, full) if w_val is not None else None
    bias = _row_param(graph, b_val, full) if b_val is not None else None
    if (w_val is not None and weight is None) or (b_val is not None and bias is None):
        return None
    others = [
        n
        for n in graph.order
        if n != node["name"]
        and not (
            graph.nodes[n]["target"] == "getitem"
            and refs(graph.nodes[n]["args"][0]) == [node["name"]]
        )
    ]
    if others:
        return None
    return {
        "kind": LAYER,
        "x": x,
        "weight": weight,
        "bias": bias,
        "eps": float(eps),
        "full": full,
        "dtype": graph.nodes[out_name]["dtype"],
    }


def match(graph: Graph) -> dict[str, Any] | None:
    if len(graph.output_names()) != 1:
        return None
    return _match_rms(graph) or _match_layer(graph)


def _bodies(kind: str, has_w: bool, has_b: bool) -> tuple[list[str], list[str]]:
    load = "tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)"
    affine = []
    if has_w:
        affine.append("y = y * tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)")
    if has_b:
        affine.append("y = y + tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)")
    store = "tl.store(out_ptr + base + cols, y.to(out_ptr.dtype.element_ty), mask=mask)"
    head = ["row = tl.program_id(0)", "base = row.to(tl.int64) * n_cols"]
    chunk = ["cols = start + tl.arange(0, BLOCK_SIZE)", "mask = cols < n_cols", f"x = {load}"]
    if kind == RMS:
        single = [
            *head,
            "cols = tl.arange(0, BLOCK_SIZE)",
            "mask = cols < n_cols",
            f"x = {load}",
            "inv = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)",
            "y = x * inv",
            *affine,
            store,
        ]
        looped = [
            *head,
            "acc = tl.zeros([BLOCK_SIZE], tl.float32)",
            "for start in range(0, n_cols, BLOCK_SIZE):",
        ]
        looped += ["    " + s for s in chunk] + ["    acc += x * x"]
        looped += [
            "inv = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)",
            "for start in range(0, n_cols, BLOCK_SIZE):",
        ]
        looped += ["    " + s for s in [*chunk, "y = x * inv", *affine, store]]
        return single, looped
    single = [
        *head,
        "cols = tl.arange(0, BLOCK_SIZE)",
        "mask = cols < n_cols",
        f"x = {load}",
        "mean = tl.sum(x, axis=0) / n_cols",
        "d = tl.where(mask, x - mean, 0.0)",
        "inv = tl.rsqrt(tl.sum(d * d, axis=0) / n_cols + eps)",
        "y = d * inv",
        *affine,
        store,
    ]
    looped = [
        *head,
        "acc = tl.zeros([BLOCK_SIZE], tl.float32)",
        "for start in range(0, n_cols, BLOCK_SIZE):",
    ]
    looped += ["    " + s for s in chunk] + ["    acc += x"]
    looped += [
        "mean = tl.sum(acc, axis=0) / n_cols",
        "acc = tl.zeros([BLOCK_SIZE], tl.float32)",
        "for start in range(0, n_cols, BLOCK_SIZE):",
    ]
    looped += ["    " + s for s in chunk] + [
        "    d = tl.where(mask, x - mean, 0.0)",
        "    acc += d * d",
    ]
    looped += [
        "inv = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)",
        "for start in range(0, n_cols, BLOCK_SIZE):",
    ]
    looped += ["    " + s for s in [*chunk, "y = (x - mean) * inv", *affine, store]]
    return single, looped


def generate(graph: Graph, params: dict[str, Any]) -> list[tuple[str, str]]:
    kind = params["kind"]
    w, b = params["weight"], params["bias"]
    single, looped = _bodies(kind, w is not None, b is not None)
    x_expr = value_of(graph.data, params["x"])
    forward = [f"x = {x_expr}.contiguous()", "n_cols = x.shape[-1]"]
    args = ["out", "x"]
    for p, var in ((w, "w"), (b, "b")):
        if p is not None:
            forward += [
                f"{var} = {value_of(graph.data, p)}.contiguous()",
                f"if {var}.numel() != n_cols:",
                f"    raise ValueError('{var} does not match the last dimension')",
            ]
            args.append(var)
    dtype = "x.dtype" if params["dtype"] == params["x"]["dtype"] else params["dtype"]
    forward += [
        f"out = torch.empty(x.shape, dtype={dtype}, device=x.device)",
        "n_rows = x.numel() // n_cols if n_cols else 0",
        "if n_rows == 0:",
        "    return out",
    ]
    ptrs = ", ".join(
        ["out_ptr", "x_ptr"]
        + (["w_ptr"] if w is not None else [])
        + (["b_ptr"] if b is not None else [])
    )
    eps = repr(params["eps"])
    sources = []
    variants = (
        (kind, single, "triton.next_power_of_2(n_cols)"),
        (f"{kind}_looped", looped, "1024"),
    )
    for name, body, block in variants[1:] if params["full"][-1] > ONE_BLOCK_MAX else variants:
        kernel = (
            f"\n\n@triton.jit\ndef {kind}_kernel({ptrs}, n_cols, eps, BLOCK_SIZE: "
            f"tl.constexpr):\n{indent(body, 4)}\n"
        )
        launch = f"{kind}_kernel[(n_rows,)]({', '.join(args)}, n_cols, {eps}, BLOCK_SIZE={block}, num_warps=4)"
        sources.append(
            (
                name,
                HEADER.format(template=name)
                + kernel
                + model_class(graph.data, [*forward, launch, "return out"]),
            )
        )
    return sources
