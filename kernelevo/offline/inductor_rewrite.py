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

from kernelevo.offline.inductor_helpers import helper_sources
from kernelevo.offline.inductor_kernels import KernelSources, NotExtractable
from kernelevo.offline.inductor_launches import (
    YZ_OVERFLOW_GRID,
    CallRewriter,
    call_function,
    check_calls,
)
from kernelevo.offline.skeleton import STATE_HELPER, SignatureError, forward_names, model_class

__all__ = ["NotExtractable", "rewrite"]

HEADER = '''"""Candidate extracted from torch.compile (Inductor) output: standalone Triton kernels with
fixed launch configurations (no torch.compile, no autotuning at run time)."""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl
'''

RUNTIME = '''

def _layout(t, size, stride, name="", symbolic=False):
    """The kernels index with the sizes and strides they were generated for. Where a size was
    symbolic, Inductor chose 32-bit indexing from the size it saw and guarded the choice."""
    if t.dim() != len(size) or any(a != b for a, b in zip(t.shape, size)):
        raise ValueError(f"input {name}: shape {tuple(t.shape)}, kernels need {tuple(size)}")
    if any(n > 1 and a != b for a, b, n in zip(t.stride(), stride, size)):
        raise ValueError(f"input {name}: strides {t.stride()}, kernels need {tuple(stride)} (make it contiguous)")
    if symbolic and t.numel() >= 2**31:
        raise ValueError(f"input {name}: {t.numel()} elements overflow the kernels' 32-bit indexing")


def _reinterpret(t, size, stride, offset):
    return torch.as_strided(t, size, stride, t.storage_offset() + offset)

'''


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
        items = re.match(r"(?:\[\d+\])+", rest)  # an item of a sequence input
        if items:
            base, rest = base + items.group(0), rest[items.end() :]
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
        elif entry[0] == "sequence":
            items = [f"{name}[{i}]" for i in range(len(entry[1]))]
            inner = _dispatch_test(entry[1], items)
            tests.append(
                f"len({name}) == {len(entry[1])}" + ("" if inner == "True" else f" and {inner}")
            )
        elif entry[1] is not None:
            tests.append(f"{name} == {entry[1]}")
    return " and ".join(tests) or "True"


def _output_expr(captured: dict[str, Any], result: str) -> str:
    """The reference's kind of output, from the list of tensors the kernels' call returns."""
    kind, nones = captured["output"], captured.get("output_none") or []
    if kind == "dict":
        return f"dict(zip({captured['output_keys']!r}, {result}))"
    if kind == "tensor":
        return f"{result}[0]"
    if nones:  # the tensors in their places, None where the reference returns None
        tensors = iter(range(captured["output_count"] - len(nones)))
        items = [
            "None" if i in nones else f"r[{next(tensors)}]" for i in range(captured["output_count"])
        ]
        inner = ", ".join(items) + ("," if len(items) == 1 else "")
        return (
            f"(lambda r: {'(' + inner + ')' if kind == 'tuple' else '[' + inner + ']'})({result})"
        )
    return f"{kind}({result})"


def rewrite(captured: dict[str, Any]) -> str:
    """Candidate source from inductor_capture's JSON (raises NotExtractable)."""
    device = captured["device"]
    state = captured["state"]
    library = [op.split(".")[-1] for op in captured.get("library_ops", [])]
    registry = KernelSources(device)
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
        fn = call_function(variant["wrapper"])
        transformer = CallRewriter(variant["kernels"], registry, suffix, library)
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
        check_calls(new_fn, set(registry.sources.values()), set(library))
        functions.append(ast.unparse(new_fn))
        args = ", ".join(_input_expr(p["source"], state, names) for p in variant["placeholders"])
        result = f"{new_fn.name}([{args}], {device_expr})"
        out = _output_expr(captured, result)
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
        parts.append(YZ_OVERFLOW_GRID)
    if registry.helpers:
        parts.append("\n\n" + helper_sources(registry.helpers))
    parts.append("\n\n" + "\n\n\n".join(registry.text) + "\n")
    parts.append("\n\n" + "\n\n\n".join(functions) + "\n")
    parts.append(model_class(captured["init_params"], captured["forward_params"], state, body))
    source = "".join(parts)
    ast.parse(source)
    return source
