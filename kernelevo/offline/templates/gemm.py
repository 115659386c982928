"""GEMM with a fused epilogue: act(x @ W^T + b) and friends, one tiled Triton matmul.

Matches linear layers (aten.t + addmm / mm, with views for inputs of rank > 2) followed
by elementwise ops on the product whose other operands are per-output-channel vectors,
scalars or tensors of the output's shape. fp32 operands multiply in TF32 only when the
task's tolerance accepts it.
"""

from __future__ import annotations

from typing import Any

from kernelevo.offline.templates.common import (
    HEADER,
    Emitter,
    Graph,
    Unsupported,
    indent,
    is_elementwise,
    model_class,
    refs,
    value_of,
)

NAME = "gemm_epilogue"
VIEWS = {"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"}


def _placeholder(graph: Graph, value: Any) -> dict[str, Any] | None:
    names = refs(value)
    return graph.placeholders.get(names[0]) if isinstance(value, dict) and len(names) == 1 else None


def match(graph: Graph) -> dict[str, Any] | None:
    outputs = graph.output_names()
    if len(outputs) != 1:
        return None
    mms = [
        n
        for n in graph.order
        if graph.nodes[n]["target"] in ("aten.addmm.default", "aten.mm.default")
    ]
    if len(mms) != 1:
        return None
    mm = graph.nodes[mms[0]]
    bias = None
    if mm["target"] == "aten.addmm.default":
        if mm["kwargs"].get("beta", 1) != 1 or mm["kwargs"].get("alpha", 1) != 1:
            return None
        bias = _placeholder(graph, mm["args"][0])
        a_val, b_val = mm["args"][1], mm["args"][2]
    else:
        a_val, b_val = mm["args"][0], mm["args"][1]
    _m, n = mm["shape"]
    if bias is None and mm["target"] == "aten.addmm.default":
        return None
    if bias is not None and (bias["kind"] == "input" or bias["shape"] not in ([n], [1, n])):
        return None
    before: set[str] = set()
    a_node = graph.nodes.get(refs(a_val)[0]) if refs(a_val) else None
    if a_node is not None and a_node["target"] in VIEWS:
        before.add(a_node["name"])
        a_val = a_node["args"][0]
    x = _placeholder(graph, a_val)
    if x is None or x["kind"] != "input" or not x["shape"]:
        return None
    k = x["shape"][-1]
    b_node = graph.nodes.get(refs(b_val)[0]) if refs(b_val) else None
    if b_node is not None and b_node["target"] in ("aten.t.default", "aten.permute.default"):
        if b_node["target"] == "aten.permute.default" and b_node["args"][1] not in ([1, 0],):
            return None
        before.add(b_node["name"])
        w = _placeholder(graph, b_node["args"][0])
        layout = "nk"
    else:
        w = _placeholder(graph, b_val)
        layout = "kn"
    if w is None or w["kind"] == "input" or len(w["shape"]) != 2:
        return None
    if (layout == "nk" and w["shape"] != [n, k]) or (layout == "kn" and w["shape"] != [k, n]):
        return None
    after = [name for name in graph.order if name not in before and name != mm["name"]]
    out_shape = graph.shape(outputs[0])
    if not all(
        graph.nodes[name]["target"] in VIEWS or is_elementwise(graph, name) for name in after
    ):
        return None
    if outputs[0] != mm["name"] and outputs[0] not in after:
        return None
    if not out_shape or out_shape[-1] != n:
        return None
    return {
        "mm": mm["name"],
        "x": x,
        "w": w,
        "bias": bias,
        "layout": layout,
        "after": after,
        "output": outputs[0],
        "n": n,
    }


def _precision(graph: Graph) -> str:
    tol = graph.data.get("tolerance") or {}
    tol = tol.get("float32", tol)
    return (
        "tf32"
        if float(tol.get("rel_l2", 0.0)) >= 5e-4 or float(tol.get("atol", 0.0)) >= 1e-3
        else "ieee"
    )


def generate(graph: Graph, params: dict[str, Any]) -> list[tuple[str, str]]:
    n = params["n"]
    env = {params["mm"]: "acc"}
    extra: list[tuple[str, str, str]] = []  # (placeholder, ptr, class)
    for name in params["after"]:
        for r in refs(graph.nodes[name]["args"]):
            if r in graph.placeholders and r not in env:
                p = graph.placeholders[r]
                cls = (
                    "scalar"
                    if p["shape"] is not None and all(d == 1 for d in p["shape"])
                    else "row"
                    if p["shape"] is not None
                    and p["shape"][-1] == n
                    and all(d == 1 for d in p["shape"][:-1])
                    else "full"
                    if p["kind"] == "input" and p["shape"] == graph.shape(params["output"])
                    else None
                )
                if cls is None:
                    raise Unsupported(f"epilogue operand {r} of shape {p['shape']}")
                ptr = f"e{len(extra)}_ptr"
                extra.append((r, ptr, cls))
                env[r] = f"v_{r}"
    emitter = Emitter(graph, env)
    for name in params["after"]:
        node = graph.nodes[name]
        if node["target"] in VIEWS:
            emitter.env[name] = emitter.env[refs(node["args"][0])[0]]
        else:
            emitter.emit(name)
    result = emitter.env[params["output"]]
    loads = []
    for r, ptr, cls in extra:
        if cls == "scalar":
            loads.append(f"v_{r} = tl.load({ptr}).to(tl.float32)")
        elif cls == "row":
            loads.append(
                f"v_{r} = tl.load({ptr} + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]"
            )
        else:
            loads.append(
                f"v_{r} = tl.load({ptr} + rm[:, None] * N + rn[None, :], mask=c_mask, other=0.0).to(tl.float32)"
            )
    bias = params["bias"] is not None
    body = [
        "pid = tl.program_id(0)",
        "grid_m = tl.cdiv(M, BLOCK_M)",
        "grid_n = tl.cdiv(N, BLOCK_N)",
        "width = GROUP_M * grid_n",
        "first_m = (pid // width) * GROUP_M",
        "group_rows = tl.minimum(grid_m - first_m, GROUP_M)",
        "pid_m = first_m + (pid % width) % group_rows",
        "pid_n = (pid % width) // group_rows",
        "rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
        "rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)",
        "rk = tl.arange(0, BLOCK_K)",
        "acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)",
        "for k0 in range(0, K, BLOCK_K):",
        "    kk = k0 + rk",
        "    a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak, mask=(rm[:, None] < M) & "
        "(kk[None, :] < K), other=0.0)",
        "    b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn, mask=(kk[:, None] < K) & "
        "(rn[None, :] < N), other=0.0)",
        f"    acc = tl.dot(a, b, acc, input_precision={_precision(graph)!r})",
        "c_mask = (rm[:, None] < M) & (rn[None, :] < N)",
    ]
    if bias:
        body.append(
            "acc = acc + tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]"
        )
    body += loads + emitter.lines
    body.append(
        f"tl.store(c_ptr + rm[:, None] * N + rn[None, :], ({result}).to(c_ptr.dtype.element_ty), mask=c_mask)"
    )
    ptrs = ", ".join(
        ["a_ptr", "b_ptr"] + (["bias_ptr"] if bias else []) + [p for _, p, _ in extra] + ["c_ptr"]
    )
    kernel = (
        f"\n\n@triton.jit\ndef gemm_epilogue_kernel({ptrs}, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,\n"
        "                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,\n"
        f"                         GROUP_M: tl.constexpr):\n{indent(body, 4)}\n"
    )

    w_strides = (
        "w.stride(1), w.stride(0)" if params["layout"] == "nk" else "w.stride(0), w.stride(1)"
    )
    n_expr = "w.shape[0]" if params["layout"] == "nk" else "w.shape[1]"
    forward = [
        f"x = {value_of(graph.data, params['x'])}",
        f"w = {value_of(graph.data, params['w'])}",
        "K = x.shape[-1]",
        "a = x.reshape(-1, K)",
        "M = a.shape[0]",
        f"N = {n_expr}",
    ]
    args = ["a", "w"]
    if bias:
        forward.append(f"bias = {value_of(graph.data, params['bias'])}.contiguous()")
        args.append("bias")
    for i, (r, _, cls) in enumerate(extra):
        expr = value_of(graph.data, graph.placeholders[r]) + ".contiguous()"
        forward.append(f"e{i} = {expr}" if cls != "full" else f"e{i} = {expr}.reshape(M, N)")
        args.append(f"e{i}")
    out_dtype = graph.get(params["output"])["dtype"]
    dtype = "x.dtype" if out_dtype == params["x"]["dtype"] else out_dtype
    forward += [
        f"out = torch.empty((M, N), dtype={dtype}, device=x.device)",
        "if M == 0:",
        "    return out.reshape(*x.shape[:-1], N)",
    ]
    sources = []
    for name, cfg in (
        (NAME, "BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3"),
        (
            f"{NAME}_large",
            "BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=3",
        ),
    ):
        launch = [
            "gemm_epilogue_kernel[lambda meta: (triton.cdiv(M, meta['BLOCK_M']) * triton.cdiv(N, meta['BLOCK_N']),)](",
            f"    {', '.join(args)}, out, M, N, K, a.stride(0), a.stride(1), {w_strides},",
            f"    {cfg})",
            "return out.reshape(*x.shape[:-1], N)",
        ]
        sources.append(
            (
                name,
                HEADER.format(template=name) + kernel + model_class(graph.data, forward + launch),
            )
        )
    return sources
