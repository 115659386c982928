"""What each function and class in a file does, in one pass over its syntax tree.

Facts are local (calls, attributes, launches); detect.py joins them across the file, so a
method that calls a helper which calls `torch.softmax` still counts as using it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from kernelevo.targets.imports import bind_import, dotted, resolve, resolve_expr
from kernelevo.targets.op_names import STEP_OWNERS, TENSOR_METHODS, TRAINING_METHODS


@dataclass
class FuncFacts:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    qualname: str
    cls: str | None = None
    ops: set[str] = field(default_factory=set)
    calls: set[str] = field(default_factory=set)
    self_calls: set[str] = field(default_factory=set)
    self_attrs: set[str] = field(default_factory=set)
    self_assigned: dict[str, set[str]] = field(default_factory=dict)
    launches: set[str] = field(default_factory=set)
    package_calls: set[str] = field(default_factory=set)  # relative: `.fast_norm.rms_norm2d`
    names: set[str] = field(default_factory=set)
    local_values: dict[str, ast.expr] = field(default_factory=dict)
    calls_nodes: list[ast.Call] = field(default_factory=list)
    cu_refs: list[ast.Constant] = field(default_factory=list)
    training: bool = False
    triton_kernel: bool = False
    arith: bool = (
        False  # tensor-style arithmetic (+ - * / ** @, unary minus) outside integer index maths
    )
    harness: bool = (
        False  # a benchmark or test: decorated by triton.testing/pytest, or times/asserts results
    )
    triton_lang: bool = (
        False  # calls triton.language: device code, not something Python calls with tensors
    )
    tensor_signal: bool = (
        False  # slicing, a tensor method or a torch call, or a Tensor-annotated parameter
    )
    scalar_params: bool = (
        False  # every parameter is annotated, none as a Tensor (int, a config class...)
    )
    generator: bool = False  # yields: a data loader, not a computation


@dataclass
class ClassFacts:
    node: ast.ClassDef
    qualname: str
    bases: list[str]
    methods: dict[str, FuncFacts] = field(default_factory=dict)
    class_attrs: set[str] = field(default_factory=set)
    is_module: bool = False

    def attributes(self) -> dict[str, set[str]]:
        """Attributes set on `self` anywhere in the class, with the constructors that build them."""
        out: dict[str, set[str]] = {}
        for m in self.methods.values():
            for k, v in m.self_assigned.items():
                out.setdefault(k, set()).update(v)
        return out


def function_facts(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    qualname: str,
    aliases: dict[str, str],
    cls: str | None = None,
    want_cuda: bool = False,
) -> FuncFacts:
    f = FuncFacts(fn, qualname, cls)
    for stmt in fn.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            aliases = dict(aliases)
            bind_import(stmt, aliases)
    ops = f.ops
    names_add, self_attrs_add = f.names.add, f.self_attrs.add
    Call, Name, Attribute, Subscript, Constant = (
        ast.Call,
        ast.Name,
        ast.Attribute,
        ast.Subscript,
        ast.Constant,
    )
    Assign, AnnAssign, BinOp, MatMult, AST = (
        ast.Assign,
        ast.AnnAssign,
        ast.BinOp,
        ast.MatMult,
        ast.AST,
    )
    fields_of = _CHILD_FIELDS
    int_ctx: set[int] = set()
    UnaryOp, USub, Slice = ast.UnaryOp, ast.USub, ast.Slice
    Tuple, List, Expr, Return = ast.Tuple, ast.List, ast.Expr, ast.Return
    # One explicit-stack walk over the body only (decorators such as example-input lambdas are
    # not what the function does); leaves and hot node types are handled inline because this
    # loop is most of detection's time.
    stack: list = list(fn.body)
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        node = pop()
        t = type(node)
        if t is Name:
            names_add(node.id)
            continue
        if t is Constant:
            if want_cuda and type(node.value) is str and node.value.endswith((".cu", ".cuh")):
                f.cu_refs.append(node)
            continue
        if t is Attribute:
            v = node.value
            if type(v) is Name and v.id == "self":
                self_attrs_add(node.attr)
            else:
                push(v)
            continue
        if t is Call:
            func = node.func
            ft = type(func)
            if ft is Name:
                full = aliases.get(func.id)
                if full is None:
                    f.calls.add(func.id)
                elif full.startswith("torch."):
                    ops.add(full)
                else:
                    _library_call(f, full)
            elif ft is Attribute:
                _attribute_call(f, func, aliases)
            elif ft is Subscript:
                v = func.value
                if type(v) is Name:
                    f.launches.add(v.id)
                elif type(v) is Call and v.args and type(v.args[0]) is Name:
                    f.launches.add(v.args[0].id)
            if want_cuda:
                f.calls_nodes.append(node)
            push(func)
            extend(node.args)
            for kw in node.keywords:
                push(kw.value)
            continue
        if t is BinOp:
            op = type(node.op)
            if op is MatMult:
                ops.add("torch.matmul")
            if op in _INDEX_OPS or id(node) in int_ctx:
                int_ctx.add(id(node.left))
                int_ctx.add(id(node.right))
            elif op in _TENSOR_OPS and not (
                (type(node.left) is Constant and type(node.right) is Constant)
                or _python_value(node.left)
                or _python_value(node.right)
            ):
                f.arith = True
            push(node.left)
            push(node.right)
            continue
        operand = node.operand if t is UnaryOp and type(node.op) is USub else None
        if operand is not None and type(operand) is not Constant and not _python_value(operand):
            f.arith = True
        elif t is Subscript and (type(node.slice) is Slice or type(node.slice) is ast.Tuple):
            f.tensor_signal = True
        if t is Assign:
            _assignment(f, node, aliases)
            extend(node.targets)
            push(node.value)
            continue
        if t is Tuple or t is List or t is Expr or t is Return:
            if t is Tuple or t is List:
                extend(node.elts)
            elif node.value is not None:
                push(node.value)
            continue
        if t is AnnAssign:
            _assignment(f, node, aliases)
        elif t is ast.Yield or t is ast.YieldFrom:
            f.generator = True
        fields = fields_of.get(t)
        if fields is None:
            fields = fields_of[t] = tuple(
                n for n in getattr(t, "_fields", ()) if n not in _SKIP_FIELDS
            )
        for name in fields:
            v = getattr(node, name, None)
            if type(v) is list:
                extend(v)
            elif isinstance(v, AST):
                push(v)
    for name in list(f.launches):
        value = f.local_values.get(name)
        if value is not None:
            f.launches.update(_launch_roots(value))
    _signature_facts(f, aliases)
    if ops:
        f.tensor_signal = True
    return f


_INDEX_OPS = frozenset(
    {ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor}
)
_TENSOR_OPS = frozenset({ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.MatMult})


def _python_value(node: ast.expr) -> bool:
    """`(val,) * depth`, `"-" * 80`, `-torch.finfo(t.dtype).max`: Python sequences and a dtype's
    limits, not tensors."""
    if type(node) in (ast.Tuple, ast.List):
        return True
    if type(node) is ast.Constant:
        return isinstance(node.value, str)
    return (
        type(node) is ast.Attribute
        and type(node.value) is ast.Call
        and (dotted(node.value.func) or "").rsplit(".", 1)[-1] in ("finfo", "iinfo")
    )


_HARNESS_CALLS = (
    "triton.testing.",
    "torch.testing.",
    "pytest.",
    "torch.cuda.Event",
    "torch.cuda.synchronize",
    "time.perf_counter",
    "timeit.",
)


def _library_call(f: FuncFacts, full: str) -> None:
    if full.startswith("."):  # a function of the user's own package (`rms_norm2d(x, ...)`)
        f.package_calls.add(full)
    elif full.startswith(("triton.language.", "tl.")):
        f.triton_lang = True
    elif full.startswith(_HARNESS_CALLS):
        f.harness = True


def _launch_roots(value: ast.expr) -> set[str]:
    """Kernels a variable may hold: `k.warmup(...)`, `k[grid]`, `a if c else b`, or a plain name."""
    if isinstance(value, ast.IfExp):
        return _launch_roots(value.body) | _launch_roots(value.orelse)
    if isinstance(value, ast.Call):
        value = value.func
        if isinstance(value, ast.Attribute):
            value = value.value
    if isinstance(value, ast.Subscript):
        value = value.value
    d = dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
    return {d.split(".", 1)[0]} if d else set()


def _signature_facts(f: FuncFacts, aliases: dict[str, str]) -> None:
    node = f.node
    for dec in node.decorator_list:
        full = resolve_expr(dec.func if isinstance(dec, ast.Call) else dec, aliases) or ""
        if full.startswith(("triton.testing.", "pytest.")):
            f.harness = True
    args = node.args.posonlyargs + node.args.args
    if f.cls is not None and args:
        args = args[1:]
    kinds = []
    for a in args:
        ann = a.annotation
        text = (dotted(ann) or "") if ann is not None else ""
        if text.rsplit(".", 1)[-1] in ("Tensor", "FloatTensor", "LongTensor"):
            f.tensor_signal = True
        kinds.append(ann is not None and not text.rsplit(".", 1)[-1].endswith("Tensor"))
    f.scalar_params = bool(kinds) and all(kinds)


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
_SKIP_FIELDS = frozenset({"ctx", "op", "ops", "type_comment", "kind", "decorator_list"})


def _attribute_call(f: FuncFacts, func: ast.Attribute, aliases: dict[str, str]) -> None:
    d = dotted(func)
    attr = func.attr
    full = None
    if d is not None:
        root = d.split(".", 1)[0]
        if root == "self":
            if d.count(".") == 1:
                f.self_calls.add(attr)
                return
        else:
            full = resolve(d, aliases)
            if full is None:
                f.calls.add(d)
            elif full.startswith("torch."):
                f.ops.add(full)
                if full.startswith(
                    ("torch.testing.", "torch.cuda.Event", "torch.cuda.synchronize")
                ):
                    f.harness = True
                return
            elif attr == "apply" and d.split(".")[-2][:1].isupper():
                f.ops.add(full)  # an imported autograd Function: `LigerRMSNormFunction.apply(x, w)`
                return
            else:
                _library_call(f, full)
    if full is None and attr in TENSOR_METHODS:
        f.ops.add("Tensor." + attr)
    if attr in TRAINING_METHODS or (
        attr == "step" and d is not None and d.split(".")[-2].lower().startswith(STEP_OWNERS)
    ):
        f.training = True


def _assignment(f: FuncFacts, node: ast.Assign | ast.AnnAssign, aliases: dict[str, str]) -> None:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    value = node.value
    for tgt in targets:
        if (
            isinstance(tgt, ast.Attribute)
            and isinstance(tgt.value, ast.Name)
            and tgt.value.id == "self"
        ):
            f.self_assigned[tgt.attr] = constructors(value, aliases) if value is not None else set()
        elif isinstance(tgt, ast.Name) and value is not None:
            f.local_values[tgt.id] = value


def constructors(value: ast.expr, aliases: dict[str, str]) -> set[str]:
    """Callables invoked to build a value: `torch.nn.Linear`, or bare names of same-file classes."""
    out: set[str] = set()
    stack: list = [value]
    while stack:  # a walk that skips what cannot hold a call (most values are one constructor)
        node = stack.pop()
        t = type(node)
        if t is ast.Call:
            d = dotted(node.func)
            if d is None:
                stack.append(node.func)
            else:
                full = resolve(d, aliases)
                out.add(full if full is not None else d)
            stack.extend(node.args)
            stack.extend(k.value for k in node.keywords)
        elif t is ast.Attribute:
            stack.append(node.value)
        elif t is not ast.Name and t is not ast.Constant:
            stack.extend(ast.iter_child_nodes(node))
    return out


def is_module_base(name: str) -> bool:
    """`torch.nn.Module`, `torch.nn.Linear`, `pl.LightningModule`: bases that make a class a module."""
    last = name.rsplit(".", 1)[-1]
    return (
        name.startswith("torch.nn.")
        and last[:1].isupper()
        and not name.startswith("torch.nn.parameter")
    ) or (last.endswith("Module") and last != "ModuleType")


def class_facts(
    node: ast.ClassDef, qualname: str, aliases: dict[str, str], want_cuda: bool
) -> tuple[ClassFacts, list[tuple[ast.ClassDef, str]]]:
    """Facts for a class's methods, plus its nested classes (to be visited in turn)."""
    bases = []
    for b in node.bases:
        d = dotted(b)
        if d is not None:
            bases.append(resolve(d, aliases) or d)
    c = ClassFacts(node, qualname, bases)
    nested: list[tuple[ast.ClassDef, str]] = []
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            c.methods[stmt.name] = function_facts(
                stmt, f"{qualname}.{stmt.name}", aliases, qualname, want_cuda
            )
        elif isinstance(stmt, ast.ClassDef):
            nested.append((stmt, f"{qualname}.{stmt.name}"))
        elif isinstance(stmt, ast.Assign):
            c.class_attrs.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            c.class_attrs.add(stmt.target.id)
    for m in c.methods.values():
        for name in ("register_buffer", "register_parameter"):
            if name in m.self_calls:
                for sub in ast.walk(m.node):
                    if (
                        isinstance(sub, ast.Call)
                        and isinstance(sub.func, ast.Attribute)
                        and sub.func.attr == name
                        and sub.args
                        and isinstance(sub.args[0], ast.Constant)
                    ):
                        m.self_assigned.setdefault(str(sub.args[0].value), set())
    return c, nested
