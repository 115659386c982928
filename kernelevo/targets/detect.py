"""Finding what KernelEvo can optimise in a file, from its text alone.

Runs in the language server on every edit, so: no torch or triton import, one parse, one
walk per function, and a substring pre-filter that skips files with nothing to find.
"""

from __future__ import annotations

import ast
import gc
import os
from dataclasses import dataclass, field

from kernelevo.targets import cuda
from kernelevo.targets.chunks import Chunk, ChunkCache, parse_whole
from kernelevo.targets.facts import ClassFacts, FuncFacts, chunk_facts, is_module_base, lighten
from kernelevo.targets.imports import collect_module_aliases
from kernelevo.targets.model import Detection, Target
from kernelevo.targets.spans import cu_file_targets, make_targets, node_span, slice_text

_PREFILTER = ("torch", "triton", "cupy", "pycuda", "__global__", ".cu")
_CUDA_WORDS = ("load_inline", "SourceModule", "RawKernel", "RawModule", ".cu")
_SKIP_FUNCTIONS = frozenset({"get_inputs", "get_init_inputs", "get_extra_inputs", "main"})
_NOT_COMPUTE = (
    "torch.manual_seed",
    "torch.no_grad",
    "torch.inference_mode",
    "torch.enable_grad",
    "torch.set_",
    "torch.get_",
    "torch.is_",
    "torch.device",
    "torch.cuda.",
    "torch.backends.",
    "torch.optim",
    "torch.utils.",
    "torch.save",
    "torch.load",
    "torch.compile",
    "torch.jit.",
    "torch.distributed",
    "torch.autograd",
    "torch.Generator",
    "torch.finfo",
    "torch.iinfo",
    "torch.nn.init.",
    "torch.nn.utils",
    "torch.testing",
    "torch.profiler",
    "torch.amp",
    "torch.autocast",
    "torch.onnx",
    "torch.hub",
    "torch.multiprocessing",
    "torch.library",
    "torch.rand",
    "torch.zeros",
    "torch.ones",
    "torch.empty",
    "torch.full",
    "torch.arange",
    "torch.linspace",
    "torch.tensor",
    "torch.as_tensor",
    "torch.from_numpy",
    "torch.stack",
    "torch.cat",
    "torch.numel",
    "Tensor.float",
    "Tensor.half",
    "Tensor.bfloat16",
    "Tensor.double",
    "Tensor.contiguous",
    "Tensor.view",
    "Tensor.reshape",
    "Tensor.flatten",
    "Tensor.unsqueeze",
    "Tensor.squeeze",
    "Tensor.permute",
    "Tensor.t",
    "Tensor.transpose",
    "Tensor.expand",
    "Tensor.view_as",
    "Tensor.type_as",
    "Tensor.chunk",
    "Tensor.unbind",
    "Tensor.narrow",
    "Tensor.max",
    "Tensor.min",
    "Tensor.sum",
    "Tensor.mean",
)
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
    kernels: dict[str, ast.FunctionDef] = field(default_factory=dict)
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
    nodes: dict[str, ast.AST] = field(default_factory=dict)
    cuda_sites: dict[str, cuda.CudaSite] = field(default_factory=dict)
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


_CACHE = ChunkCache()


def detect_file(path: str, cache: bool = True) -> Detection:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            source = fh.read()
    except OSError as exc:
        return Detection(path, [], [f"{path}: cannot read: {exc.strerror or exc}"])
    return detect_source(source, path, cache)


def detect_source(source: str, path: str, cache: bool = True) -> Detection:
    """Targets in `source`. With `cache`, statements unchanged since the last call for `path`
    are not parsed or analysed again (what an editor needs on each keystroke)."""
    if not cache:
        return analyze_source(source, path).detection()
    with _CACHE.lock:
        return _gc_paused(source, path, _CACHE).detection()


def analyze_file(path: str) -> Analysis:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            source = fh.read()
    except OSError as exc:
        a = Analysis(path, "", [])
        a.errors.append(f"{path}: cannot read: {exc.strerror or exc}")
        return a
    return analyze_source(source, path)


def analyze_source(source: str, path: str) -> Analysis:
    """Full analysis with real line numbers in every node (for building tasks and applying kernels)."""
    return _gc_paused(source, path, None)


def _gc_paused(source: str, path: str, cache: ChunkCache | None) -> Analysis:
    # Parsing allocates many small objects; the cyclic collector running mid-parse costs
    # a third of the time and frees nothing, so it waits until we are done.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _analyze(source, path, cache)
    finally:
        if paused:
            gc.enable()


def _analyze(source: str, path: str, cache: ChunkCache | None) -> Analysis:
    a = Analysis(path, source, source.split("\n"))
    if path.endswith(cuda.FILE_SUFFIXES):
        a.targets = cu_file_targets(path, source, a.lines)
        return a
    if not any(w in source for w in _PREFILTER):
        return a
    chunks: list[Chunk]
    if cache is None:
        chunks, a.errors = parse_whole(source, a.lines, path)
        a.body = [stmt for c in chunks for stmt in c.body]
    else:
        chunks, a.errors = cache.parse(a.lines, path)
        a.detection_only = True
    for c in chunks:
        if c.parsed.aliases is None:
            c.parsed.aliases = collect_module_aliases(c.body)
        a.aliases.update(c.parsed.aliases)
    want_cuda = any(w in source for w in _CUDA_WORDS)
    key = (tuple(sorted(a.aliases.items())), want_cuda)
    module_calls: list[tuple[ast.Call, int]] = []
    cu_refs: list[tuple[ast.Constant, int]] = []
    for c in chunks:
        items = c.parsed.derived.get(key)
        if items is None:
            items = chunk_facts(c.body, a.aliases, want_cuda)
            c.parsed.derived = {key: items}
            if cache is not None and not want_cuda:
                lighten(items)
                c.parsed.body = None  # a cached tree would make every full GC pass walk it
        off = c.offset
        for f in items.functions:
            a.functions[f.qualname] = f
            a.every_function.append(f)
            a.offsets[id(f)] = off
        a.kernels.update(items.kernels)
        for name, stmt, fn in items.jit_assigns:
            a.kernels[name] = stmt
            a.jit_assigned.append((name, stmt, fn, off))
        for k in items.classes:
            a.classes[k.qualname] = k
            a.every_class.append(k)
            a.offsets[id(k)] = off
            for m in k.methods.values():
                a.offsets[id(m)] = off
        for name, value in items.values.items():
            a.module_values[name] = (value, off)
        module_calls.extend((call, off) for call in items.calls)
        cu_refs.extend((ref, off) for ref in items.cu_refs)
    _mark_modules(a)
    found: list[tuple[str, str, str, ast.AST, list[str], int]] = []
    _python_targets(a, found)
    if want_cuda:
        _cuda_targets(a, found, module_calls, cu_refs)
    made = make_targets(a.path, a.lines, found)
    a.targets = [t for t, _ in made]
    a.nodes = {t.id: n for t, n in made}
    return a


def _mark_modules(a: Analysis) -> None:
    for c in a.classes.values():
        c.is_module = False  # cached facts may carry a verdict made with other base classes
    changed = True
    while changed:
        changed = False
        for c in a.classes.values():
            if not c.is_module and any(
                is_module_base(b) or (b in a.classes and a.classes[b].is_module) for b in c.bases
            ):
                c.is_module = changed = True
    for c in a.classes.values():
        if not c.is_module and _forward_on_imported_base(a, c):
            c.is_module = True


_NOT_MODULE_BASES = (
    "torch.autograd",
    "typing.",
    "enum.",
    "abc.",
    "dataclasses.",
    "collections.",
    "object",
    "Exception",
    "dict",
    "list",
    "tuple",
    "str",
    "int",
    "float",
    "NamedTuple",
    "Enum",
    "Protocol",
)


def _forward_on_imported_base(a: Analysis, c: ClassFacts, _depth: int = 0) -> bool:
    """`class LlamaModel(LlamaPreTrainedModel)` with its base imported from a library: a module if it
    defines forward(self, ...), since only torch-style modules are called that way."""
    fwd = c.methods.get("forward")
    if fwd is None or _depth > 20:
        return False
    node = fwd.node
    args = getattr(getattr(node, "args", None), "args", None)
    if args is not None and (not args or args[0].arg != "self"):
        return False
    return _rooted_in_import(a, c, 0)


def _rooted_in_import(a: Analysis, c: ClassFacts, depth: int) -> bool:
    for b in c.bases:
        if b.startswith(_NOT_MODULE_BASES) or depth > 20:
            continue
        base = a.classes.get(b)
        if base is None or _rooted_in_import(a, base, depth + 1):
            return True
    return False


_NOT_COMPUTE_METHODS = frozenset(op for op in _NOT_COMPUTE if op.startswith("Tensor."))
_NOT_COMPUTE_TORCH = tuple(op for op in _NOT_COMPUTE if not op.startswith("Tensor."))


def _is_compute(op: str) -> bool:
    if op.startswith("Tensor."):
        return op not in _NOT_COMPUTE_METHODS  # exact: Tensor.t is layout, Tensor.tanh is not
    if op.startswith("torch.nn.") and op[9:10].isupper():
        return False
    return not op.startswith(_NOT_COMPUTE_TORCH)


def _python_targets(a: Analysis, found: list) -> None:
    kernels = a.kernels.keys()
    launched = _launched(a)
    jit_sources = {fn for _, _, fn, _ in a.jit_assigned}
    for f in a.every_function:
        name, off = f.qualname, a.offsets[id(f)]
        if name in kernels and f.triton_kernel:
            if name in launched or not _called_by_kernels(a, name):
                found.append(("triton_kernel", name, name, f.node, [], off))
        elif f.launches & kernels:
            found.append(("triton_launcher", name, name, f.node, sorted(a.ops(f)), off))
        elif _plain_function(a, f) and name not in jit_sources:
            ops = a.ops(f)
            if any(_is_compute(op) for op in ops) or (
                (f.tensor_signal or not f.scalar_params) and _arith_only(f, ops)
            ):
                found.append(("function", name, name, f.node, sorted(ops), off))
    for name, stmt, _fn, off in a.jit_assigned:
        found.append(("triton_kernel", name, name, stmt, [], off))
    for c in a.every_class:
        qual, off = c.qualname, a.offsets[id(c)]
        fwd = c.methods.get("forward")
        for m in c.methods.values():
            if m.launches & kernels and (m is fwd or not c.is_module):
                found.append(
                    ("triton_launcher", c.node.name, m.qualname, m.node, sorted(a.ops(m)), off)
                )
        if c.is_module and fwd is not None and not fwd.launches & kernels:
            ops = a.ops(fwd)
            if ops or fwd.arith:
                found.append(("module", c.node.name, qual, c.node, sorted(ops), off))


_NOT_TARGET_PREFIXES = (
    "test_",
    "get_",
    "set_",
    "is_",
    "has_",
    "load_",
    "save_",
    "print_",
    "log_",
    "parse_",
    "bench",
    "time_",
    "profile",
    "plot",
    "main",
)


def _plain_function(a: Analysis, f: FuncFacts) -> bool:
    """A function a user would call with tensors: not a test, benchmark, training step or device code."""
    name = f.qualname
    return (
        name not in _SKIP_FUNCTIONS
        and not f.training
        and not f.harness
        and not f.triton_lang
        and not name.startswith(_NOT_TARGET_PREFIXES)
    )


def _arith_only(f: FuncFacts, ops: set[str]) -> bool:
    """Written with operators, slicing and torch.cat alone (rotate_half, `a * a`): still a target."""
    if f.generator:
        return False
    return f.arith or (f.tensor_signal and bool(ops & {"torch.cat", "torch.stack"}))


def _launched(a: Analysis) -> set[str]:
    out: set[str] = set()
    for f in a.every_function:
        out |= f.launches
    for c in a.every_class:
        for m in c.methods.values():
            out |= m.launches
    return out


def _called_by_kernels(a: Analysis, name: str) -> bool:
    """A @triton.jit helper called from other kernels is device code, not something to launch."""
    return any(name in f.calls for f in a.every_function if f.triton_kernel and f.qualname != name)


def _cuda_targets(
    a: Analysis,
    found: list,
    module_calls: list[tuple[ast.Call, int]],
    cu_refs: list[tuple[ast.Constant, int]],
) -> None:
    scopes: list[tuple[str | None, list[tuple[ast.Call, int]], dict[str, ast.expr], int]] = [
        (None, module_calls, {}, 0)
    ]
    every = a.every_function + [m for c in a.every_class for m in c.methods.values()]
    for f in every:
        off = a.offsets[id(f)]
        scopes.append((f.qualname, [(call, off) for call in f.calls_nodes], f.local_values, off))
        cu_refs.extend((ref, off) for ref in f.cu_refs)
    for owner, calls, local_values, local_off in scopes:
        for call, off in calls:
            loader = cuda.loader_of(call, a.aliases)
            if loader is None:
                continue
            strings = cuda.string_nodes(
                cuda.source_arg(call, loader), off, local_values, local_off, a.module_values
            )
            if not strings:
                continue
            offs = {id(node): o for node, o in strings}
            name = (
                cuda.site_name(
                    call,
                    loader,
                    [node for node, _ in strings],
                    lambda node, offs=offs: _node_text(a, node, offs[id(node)]),
                )
                or f"cuda_{call.lineno + off}"
            )
            where, where_off = max(
                strings,
                key=lambda so: (
                    "__global__" in _node_text(a, so[0], so[1]),
                    so[0].end_lineno - so[0].lineno,
                ),
            )
            found.append(("cuda_inline", name, name, where, [], where_off))
            a.cuda_sites.setdefault(
                name, cuda.CudaSite(call, loader, [s for s, _ in strings], name, owner)
            )
    seen: set[str] = set()
    for ref, off in cu_refs:
        if ref.value not in seen:
            seen.add(ref.value)
            found.append(("cuda_file", os.path.basename(ref.value), ref.value, ref, [], off))


def _node_text(a: Analysis, node: ast.AST, off: int) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return slice_text(a.lines, *node_span(a.lines, node, off))
