"""Which of a file's functions and classes are targets, once detection has joined their facts.

The rules (what is compute, what is a torch module, which functions are tests or harnesses) are
what decide recall and false positives on real code, so they live apart from the parsing and
caching in detect.py.
"""

from __future__ import annotations

from kernelevo.targets.analysis import Analysis
from kernelevo.targets.facts import ClassFacts, FuncFacts, is_module_base
from kernelevo.targets.spans import FoundTarget

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


def mark_modules(a: Analysis) -> None:
    """Mark the classes that are torch modules: a torch.nn base, a module base in this file, or a
    forward(self, ...) on a base imported from a library."""
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


def python_targets(a: Analysis, found: list[FoundTarget]) -> None:
    """Append the Triton kernels and launchers, tensor functions and torch modules of `a`."""
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
            if ops or fwd.arith or fwd.package_calls:  # timm's RmsNorm2d: `rms_norm2d(x, ...)`
                ops = ops | fwd.package_calls
                found.append(("module", c.node.name, qual, c.node, sorted(ops), off))


_NOT_TARGET_PREFIXES = (
    "test_",
    "get_",
    "set_",
    "is_",
    "has_",
    "load_",
    "save_",
    "write_",  # llm.c's write_model, write_state: a header tensor and a file, no compute
    "read_",
    "export_",
    "dump_",
    "print_",
    "log_",
    "parse_",
    "bench",
    "time_",
    "profile",
    "plot",
    "main",
    "_kernelevo_",  # the TorchScript original that Apply keeps beside its guarded function
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
