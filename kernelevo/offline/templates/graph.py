"""The traced graph a template reads: graph_trace.py's JSON with its lookups, and its literals.

Placeholders (parameters, buffers, inputs) and ATen call nodes with encoded arguments
({"n": name} for a node, literals otherwise); in-place ops on an intermediate nothing else
reads are read as their functional form. A graph outside what templates express raises
Unsupported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


class Unsupported(Exception):
    """The graph is outside what a template can express."""


@dataclass
class Graph:
    data: dict[str, Any]

    def __post_init__(self) -> None:
        self.nodes = {n["name"]: n for n in self.data["nodes"]}
        self.placeholders = {p["name"]: p for p in self.data["placeholders"]}
        self.order = [n["name"] for n in self.data["nodes"]]
        for node in self.data["nodes"]:
            self._functionalize(node)

    def _functionalize(self, node: dict[str, Any]) -> None:
        """`aten.add_.Scalar(t, ...)` on an intermediate that nothing else reads is `aten.add.Scalar`."""
        op, _, overload = node["target"].removeprefix("aten.").partition(".")
        if not node["target"].startswith("aten.") or not op.endswith("_") or op.startswith("_"):
            return
        target = refs(node["args"][0])[0] if node["args"] and refs(node["args"][0]) else None
        if target is not None and target in self.nodes and len(self.users(target)) == 1:
            node["target"] = f"aten.{op[:-1]}.{overload}"

    def get(self, name: str) -> dict[str, Any]:
        return self.nodes.get(name) or self.placeholders[name]

    def shape(self, name: str) -> list[int]:
        return self.get(name)["shape"] or []

    def users(self, name: str) -> list[str]:
        return [
            n
            for n in self.order
            if name in refs(self.nodes[n]["args"]) + refs(self.nodes[n]["kwargs"])
        ]

    def output_names(self) -> list[str]:
        out = self.data["output"]
        items = out if isinstance(out, list) else [out]
        names = []
        for item in items:
            if not isinstance(item, dict) or "n" not in item:
                raise Unsupported("an output is not a tensor computed by the graph")
            names.append(item["n"])
        return names

    def resolve(self, name: str) -> str:
        """Follows getitem(x, 0) to x (multi-output ops are matched on x)."""
        node = self.nodes.get(name)
        if node and node["target"] == "getitem":
            return node["args"][0]["n"]
        return name


def refs(value: Any) -> list[str]:
    if isinstance(value, dict) and "n" in value:
        return [value["n"]]
    if isinstance(value, list):
        return [r for v in value for r in refs(v)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in refs(v)]
    return []


def literal(value: Any) -> str:
    if isinstance(value, bool):
        return "1.0" if value else "0.0"
    if isinstance(value, (int, float)):
        v = float(value)
        if math.isinf(v):
            return 'float("inf")' if v > 0 else 'float("-inf")'
        if math.isnan(v):
            return 'float("nan")'
        return repr(v)
    raise Unsupported(f"argument {value!r} is not a number")
