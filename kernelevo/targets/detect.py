"""Finding what KernelEvo can optimise in a file, from its text alone.

Runs in the language server on every edit, so: no torch or triton import, one parse, one
walk per function, and a substring pre-filter that skips files with nothing to find.
"""

from __future__ import annotations

import ast
import gc
import os

from kernelevo.targets import cuda_source
from kernelevo.targets.analysis import Analysis
from kernelevo.targets.chunk_facts import chunk_facts, lighten
from kernelevo.targets.chunks import Chunk, ChunkCache, parse_whole
from kernelevo.targets.imports import collect_module_aliases
from kernelevo.targets.model import Detection
from kernelevo.targets.python_targets import mark_modules, python_targets
from kernelevo.targets.spans import (
    FoundTarget,
    Located,
    cu_file_targets,
    make_targets,
    node_span,
    slice_text,
)

_PREFILTER = ("torch", "triton", "cupy", "pycuda", "__global__", ".cu")
_CUDA_WORDS = ("load_inline", "SourceModule", "RawKernel", "RawModule", ".cu")
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
    if path.endswith(cuda_source.FILE_SUFFIXES):
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
    mark_modules(a)
    found: list[FoundTarget] = []
    python_targets(a, found)
    if want_cuda:
        _cuda_targets(a, found, module_calls, cu_refs)
    made = make_targets(a.path, a.lines, found)
    a.targets = [t for t, _ in made]
    a.nodes = {t.id: n for t, n in made}
    return a


def _cuda_targets(
    a: Analysis,
    found: list[FoundTarget],
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
            loader = cuda_source.loader_of(call, a.aliases)
            if loader is None:
                continue
            strings = cuda_source.string_nodes(
                cuda_source.source_arg(call, loader), off, local_values, local_off, a.module_values
            )
            if not strings:
                continue
            offs = {id(node): o for node, o in strings}
            name = (
                cuda_source.site_name(
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
                    (so[0].end_lineno or so[0].lineno) - so[0].lineno,
                ),
            )
            found.append(("cuda_inline", name, name, where, [], where_off))
            a.cuda_sites.setdefault(
                name, cuda_source.CudaSite(call, loader, [s for s, _ in strings], name, owner)
            )
    seen: set[str] = set()
    for ref, off in cu_refs:
        path = ref.value
        if isinstance(path, str) and path not in seen:
            seen.add(path)
            found.append(("cuda_file", os.path.basename(path), path, ref, [], off))


def _node_text(a: Analysis, node: Located, off: int) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return slice_text(a.lines, *node_span(a.lines, node, off))
