"""What detection learned about one file: its functions, classes, kernels and targets, and the
joins across them (a method through its base classes, the ops a function reaches through helpers).

Extraction, input guessing and apply build on this record, so it is defined apart from the
detection that fills it (detect.py).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from kernelevo.targets import cuda_source
from kernelevo.targets.facts import ClassFacts, FuncFacts
from kernelevo.targets.model import Detection, Target
from kernelevo.targets.spans import Located

_CONTAINERS = frozenset(
    {
        "torch.nn.Parameter",
        "torch.nn.ParameterList",
        "torch.nn.ParameterDict",
        "torch.nn.ModuleList",
        "torch.nn.ModuleDict",
        "torch.nn.Sequential",
        "torch.nn.Module",
    }
)


@dataclass
class Analysis:
    """Everything detection learned about one file; extraction and apply build on it."""

    path: str
    source: str
    lines: list[str]
    body: list[ast.stmt] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)
    functions: dict[str, FuncFacts] = field(default_factory=dict)
    classes: dict[str, ClassFacts] = field(default_factory=dict)
    every_function: list[FuncFacts] = field(
        default_factory=list
    )  # conditional redefinitions included
    every_class: list[ClassFacts] = field(default_factory=list)
    kernels: dict[str, ast.stmt] = field(default_factory=dict)
    jit_assigned: list[tuple[str, ast.stmt, str, int]] = field(
        default_factory=list
    )  # k = triton.jit(f)
    module_values: dict[str, tuple[ast.expr, int]] = field(
        default_factory=dict
    )  # name -> (value, line offset)
    offsets: dict[int, int] = field(
        default_factory=dict
    )  # id(facts or node) -> line offset of its chunk
    detection_only: bool = False  # built from cached chunks: node line numbers are chunk-relative
    targets: list[Target] = field(default_factory=list)
    nodes: dict[str, Located] = field(default_factory=dict)
    cuda_sites: dict[str, cuda_source.CudaSite] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    _ops: dict[str, set[str]] = field(default_factory=dict)

    def detection(self) -> Detection:
        return Detection(self.path, list(self.targets), list(self.errors))

    def target(self, key: str) -> Target | None:
        return self.detection().find(key)

    def method(self, cls: ClassFacts, name: str, _depth: int = 0) -> FuncFacts | None:
        """A method as Python would find it, through base classes defined in this file."""
        if name in cls.methods:
            return cls.methods[name]
        for b in cls.bases:
            base = self.classes.get(b)
            if base is not None and _depth < 20:
                found = self.method(base, name, _depth + 1)
                if found is not None:
                    return found
        return None

    def attributes(self, cls: ClassFacts, _depth: int = 0) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for b in cls.bases:
            base = self.classes.get(b)
            if base is not None and _depth < 20:
                out.update(self.attributes(base, _depth + 1))
        out.update(cls.attributes())
        return out

    def ops(self, f: FuncFacts, _seen: set[str] | None = None) -> set[str]:
        """Torch ops a function uses, itself or through helpers, methods and submodules in this file."""
        if f.qualname in self._ops:
            return self._ops[f.qualname]
        seen = _seen if _seen is not None else set()
        if f.qualname in seen:
            return set(f.ops)
        seen.add(f.qualname)
        ops = set(f.ops)
        for name in f.calls:
            g = self.functions.get(name)
            if g is not None:
                ops |= self.ops(g, seen)
                continue
            c = self.classes.get(name) or self.classes.get(name.rsplit(".", 1)[0])
            fwd = self.method(c, "forward") if c is not None else None
            if fwd is not None:
                ops |= self.ops(fwd, seen)
        cls = self.classes.get(f.cls) if f.cls else None
        if cls is not None:
            for m in f.self_calls:
                g = self.method(cls, m)
                if g is not None and g is not f:
                    ops |= self.ops(g, seen)
            attrs = self.attributes(cls)
            for at in f.self_attrs & attrs.keys():
                for ctor in attrs[at]:
                    if (
                        ctor.startswith("torch.nn.")
                        and ctor[9:10].isupper()
                        and ctor not in _CONTAINERS
                    ):
                        ops.add(ctor)
                    elif ctor in self.classes and self.classes[ctor].is_module:
                        fwd = self.method(self.classes[ctor], "forward")
                        if fwd is not None:
                            ops |= self.ops(fwd, seen)
        if _seen is None or not seen - {f.qualname}:
            self._ops[f.qualname] = ops
        return ops

    def launchers_of(self, kernel: str) -> list[FuncFacts]:
        out = [f for f in self.functions.values() if kernel in f.launches]
        for c in self.classes.values():
            out.extend(m for m in c.methods.values() if kernel in m.launches)
        return out
