"""The Triton kernels of captured Inductor output, rewritten to stand alone in a candidate.

Each kernel keeps its body; calls into Inductor's runtime helpers and libdevice become the
candidate's own copies (inductor_helpers.py), and a kernel compiled twice is emitted once.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from kernelevo.offline.inductor_helpers import HELPERS, LIBDEVICE_IN_TL, LIBDEVICE_OWN
from kernelevo.offline.listed_configs import listed_configs_comment


class NotExtractable(Exception):
    """Inductor's output for this task cannot become a standalone candidate (message says why)."""


class KernelSources:
    """Rewrites kernel sources; collects the helpers they need."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.helpers: set[str] = set()
        self.uses_libdevice = False
        self.sources: dict[str, str] = {}  # rewritten source (with placeholder name) -> final name
        self.text: list[str] = []

    def add(self, name: str, info: dict[str, Any], suffix: str) -> tuple[str, list[str]]:
        """Returns the candidate's name for the kernel and its parameter names."""
        if "error" in info:
            raise NotExtractable(info["error"])
        tree = ast.parse(info["source"])
        lines = info["source"].splitlines()
        funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        main = next((f for f in funcs if f.name == name), None)
        if main is None:
            raise NotExtractable(f"kernel {name}: function not found in Inductor's source")
        params = [a.arg for a in main.args.args]
        renames = {f.name: f"{f.name}{suffix}" for f in funcs}
        chunks = []
        for f in funcs:
            body = "\n".join(lines[f.lineno - 1 : f.end_lineno])
            chunks.append("@triton.jit\n" + body)
        text = "\n\n\n".join(chunks)
        text = self._replace_calls(text, name)
        key = re.sub(rf"\b{re.escape(name)}\b", "__KERNEL__", text)
        if key in self.sources:
            return self.sources[key], params
        for old, new in renames.items():
            text = re.sub(rf"\b{re.escape(old)}\b", new, text)
        self.sources[key] = renames[name]
        self.text.append(listed_configs_comment(info) + text)
        return renames[name], params

    def _replace_calls(self, text: str, kernel: str) -> str:
        def helper(m: re.Match[str]) -> str:
            fn = m.group(1)
            if fn not in HELPERS:
                raise NotExtractable(
                    f"kernel {kernel} uses Inductor helper triton_helpers.{fn}, which has no standalone version here"
                )
            self.helpers.add(fn)
            return f"_ke_{fn}"

        def libdevice(m: re.Match[str]) -> str:
            fn = m.group(1)
            if fn in LIBDEVICE_IN_TL and self.device == "cpu":
                return f"tl.{fn}"
            if self.device != "cpu":
                self.uses_libdevice = True
                return m.group(0)
            if fn in LIBDEVICE_OWN:
                self.helpers.add(fn)
                return f"_ke_{fn}"
            raise NotExtractable(
                f"kernel {kernel} calls libdevice.{fn}, which the Triton interpreter cannot run"
            )

        text = re.sub(r"\btriton_helpers\.(\w+)", helper, text)
        text = re.sub(r"\blibdevice\.(\w+)", libdevice, text)
        text = re.sub(r"\btl_math\.", "tl.math.", text)
        if re.search(
            r"\b(triton_heuristics|DeviceProperties|ReductionHint|TileHint|AutotuneHint)\b", text
        ):
            raise NotExtractable(
                f"kernel {kernel} refers to Inductor runtime objects inside its body"
            )
        return text
