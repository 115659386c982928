"""Where a task's example inputs come from, in order of preference:

1. shapes and dtypes captured while a script the user names runs (in a child process);
2. `@kernelevo.example(lambda: (...), init=lambda: (...))` on the target;
3. `# kernelevo: inputs = (...)` / `# kernelevo: init = (...)` comments just above it;
4. KernelBench-style `get_inputs()` / `get_init_inputs()` in the file, when they fit it.

Without any of them the error says exactly what to add.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kernelevo.targets.analysis import Analysis
from kernelevo.targets.captured_inputs import (
    capture_from_script,
    inputs_from_capture,
)
from kernelevo.targets.docstring_shapes import documented_shapes
from kernelevo.targets.example_inputs import ExampleInputs, NoExampleInputs
from kernelevo.targets.imports import resolve_expr
from kernelevo.targets.init_keywords import required_keyword_only, split_keyword_init
from kernelevo.targets.reference_call import Reference
from kernelevo.targets.small_sizes import (
    SmallSizes,
    derive,
    large_ints_in_expr,
    name_sizes_in_expr,
)

HINT_NAMES = ("SMALL", "TOLERANCE", "ALLOWED_LIBRARY_OPS", "VERIFY_SEEDS", "get_extra_inputs")
_COMMENT = re.compile(r"#\s*kernelevo:\s*(inputs|init)\s*=\s*(.+?)\s*$")
_AS_LIST = "def _kernelevo_list(v):\n    return list(v) if isinstance(v, (list, tuple)) else [v]\n"


def find_inputs(
    a: Analysis,
    ref: Reference,
    script: str | None = None,
    timeout: float = 300.0,
    init_data: str | None = None,
) -> ExampleInputs | None:
    """Inputs the user gave (a script, a decorator, comments, get_inputs()); None when none is there."""
    if script is not None:  # asked for explicitly: real shapes beat examples
        return inputs_from_capture(
            capture_from_script(script, a.path, ref, timeout, init_data=init_data), script
        )
    return _from_decorator(a, ref) or _from_comments(a, ref) or _from_get_inputs(a, ref)


def required_args(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> list[ast.arg]:
    args = fn.args
    positional = list(args.posonlyargs + args.args)
    if skip_self and positional:
        positional = positional[1:]
    return positional[: len(positional) - len(args.defaults)] if args.defaults else positional


def required_params(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> list[str]:
    return [a.arg for a in required_args(fn, skip_self)]


_SCALARS = {"int": ("1024", "8"), "float": ("1.0", "1.0"), "bool": ("True", "True")}
_GENERIC = {"Any", "Optional", "Union", "List", "Tuple", "Dict", "Sequence", "Callable", "Iterable"}


def _annotation(node: ast.expr | None) -> str:
    """The annotated type's name ("ModelArgs", "torch.Tensor", "int"), Optional unwrapped."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "ModelArgs"
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return ""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | None
        sides = [n for n in (node.left, node.right) if not isinstance(n, ast.Constant)]
        return _annotation(sides[0]) if len(sides) == 1 else ""
    if isinstance(node, ast.Subscript) and _annotation(node.value).endswith("Optional"):
        return _annotation(node.slice)
    return ast.unparse(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""


def _int_tuple(node: ast.expr | None) -> int:
    """2 for `Tuple[int, int]`, `tuple[int, ...]`; 0 for anything else."""
    if not (isinstance(node, ast.Subscript) and _annotation(node.value).lower().endswith("tuple")):
        return 0
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    names = [ast.unparse(i) for i in items]
    if names == ["int", "..."]:
        return 2
    return len(names) if names and all(n == "int" for n in names) else 0


def _placeholder(arg: ast.arg, for_init: bool) -> str:
    """A first value for one parameter, from its annotation: `config: ModelArgs` gets
    `ModelArgs()` (1024 would fail in a way that says nothing), `eps: float` gets 1.0."""
    name = _annotation(arg.annotation)
    base = name.rsplit(".", 1)[-1]
    if base in _SCALARS:
        return _SCALARS[base][0 if for_init else 1]
    if base == "Module":  # a module to wrap: the simplest that runs
        return "torch.nn.Identity()"
    if base[:1].isupper() and base not in _GENERIC and base != "Tensor":
        return f"{name}()"
    return "1024" if for_init and base != "Tensor" else "torch.randn(8, 1024)"


def _names(expr: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


def _getters(inputs_expr: str, init_expr: str | None) -> tuple[str, SmallSizes]:
    """get_inputs()/get_init_inputs() around the user's expressions, large int literals named."""
    small = derive(v for e in (inputs_expr, init_expr) if e for v in large_ints_in_expr(e))
    inputs_expr = name_sizes_in_expr(inputs_expr, small)
    init_expr = name_sizes_in_expr(init_expr, small) if init_expr else init_expr
    init = f"_kernelevo_list({init_expr})" if init_expr else "[]"
    code = (
        f"{_AS_LIST}\n\ndef get_inputs():\n    return _kernelevo_list({inputs_expr})\n\n\n"
        f"def get_init_inputs():\n    return {init}\n"
    )
    return code, small


def _needs_init(ref: Reference) -> bool:
    return ref.kind == "class" and bool(_ctor_params(ref))


def _ctor_args(ref: Reference) -> list[ast.arg]:
    """The constructor's required parameters, those it takes by keyword only last (none when the
    class has no __init__ of its own)."""
    if ref.init is None:
        return []
    return required_args(ref.init, True) + required_keyword_only(ref.init)


def _ctor_params(ref: Reference) -> list[str]:
    return [a.arg for a in _ctor_args(ref)]


def _from_decorator(a: Analysis, ref: Reference) -> ExampleInputs | None:
    for dec in ref.node.decorator_list:
        if (
            not isinstance(dec, ast.Call)
            or resolve_expr(dec.func, a.aliases) != "kernelevo.example"
        ):
            continue
        make = (
            dec.args[0]
            if dec.args
            else next((k.value for k in dec.keywords if k.arg == "make_inputs"), None)
        )
        init = (
            dec.args[1]
            if len(dec.args) > 1
            else next((k.value for k in dec.keywords if k.arg == "init"), None)
        )
        where = f"{a.path}:{dec.lineno}"
        if make is None:
            raise NoExampleInputs(
                f"{where}: @kernelevo.example needs a callable, e.g. lambda: (torch.randn(8, 64),)"
            )
        texts = [_call_text(a, e) for e in (make, init)]
        if init is None and _needs_init(ref):
            raise NoExampleInputs(
                f"{where}: {ref.name}({', '.join(_ctor_params(ref))}) needs constructor arguments; "
                f"add init=lambda: {_init_form(ref)} to @kernelevo.example"
            )
        uses = _names(make) | (_names(init) if init is not None else set())
        init_text, by_name = split_keyword_init(texts[1]) if texts[1] else (None, [])
        code, small = _getters(texts[0] or "", init_text)  # make is not None: a text
        return ExampleInputs(
            "decorator",
            code,
            f"@kernelevo.example at {where}",
            uses,
            small=small,
            init_keywords=by_name,
        )
    return None


def _call_text(a: Analysis, e: ast.expr | None) -> str | None:
    if e is None:
        return None
    if isinstance(e, ast.Lambda):
        return ast.get_source_segment(a.source, e.body) or ast.unparse(e.body)
    return f"({ast.get_source_segment(a.source, e) or ast.unparse(e)})()"


def _from_comments(a: Analysis, ref: Reference) -> ExampleInputs | None:
    first = min([ref.node.lineno] + [d.lineno for d in ref.node.decorator_list]) - 1
    found: dict[str, tuple[str, int]] = {}
    line = first - 1
    while line >= 0 and a.lines[line].strip().startswith("#"):
        m = _COMMENT.search(a.lines[line])
        if m:
            found.setdefault(m.group(1), (m.group(2), line + 1))
        line -= 1
    if "inputs" not in found:
        return None
    uses: set[str] = set()
    for key, (expr, lineno) in found.items():
        try:
            uses |= _names(ast.parse(expr, mode="eval"))
        except SyntaxError as exc:
            raise NoExampleInputs(
                f"{a.path}:{lineno}: `# kernelevo: {key} = ...` is not a Python expression: {exc.msg}"
            ) from None
    if "init" not in found and _needs_init(ref):
        raise NoExampleInputs(
            f"{a.path}:{first + 1}: {ref.name}({', '.join(_ctor_params(ref))}) needs constructor "
            f"arguments; add `# kernelevo: init = {_init_form(ref)}` above it"
        )
    init_text, by_name = split_keyword_init(found["init"][0]) if "init" in found else (None, [])
    code, small = _getters(found["inputs"][0], init_text)
    return ExampleInputs(
        "comment",
        code,
        f"`# kernelevo:` comments at {a.path}:{found['inputs'][1]}",
        uses,
        small=small,
        init_keywords=by_name,
    )


def _by_name(ref: Reference) -> bool:
    """Whether the constructor takes some required arguments by keyword only, so that the user
    writes them all as `dict(name=value, ...)`."""
    return ref.init is not None and bool(required_keyword_only(ref.init))


def _init_form(ref: Reference) -> str:
    return "dict(...)" if _by_name(ref) else "(...)"


_PRECISION = re.compile(r"#\s*kernelevo:\s*precision\s*=\s*(tf32|bf16)\s*$")
PRECISION_FLAGS = {"tf32": "ALLOW_TF32", "bf16": "ALLOW_BF16"}


def accepted_precision(a: Analysis, ref: Reference) -> list[str]:
    """Lower precision levels the user accepts for the target: `# kernelevo: precision = tf32`
    among the comments just above it (the task then sets ALLOW_TF32, and its baselines use TF32)."""
    line = min([ref.node.lineno] + [d.lineno for d in ref.node.decorator_list]) - 2
    found: list[str] = []
    while line >= 0 and a.lines[line].strip().startswith("#"):
        m = _PRECISION.search(a.lines[line])
        if m and m.group(1) not in found:
            found.append(m.group(1))
        line -= 1
    return found


def precision_comment(level: str, indent: str = "") -> str:
    if level not in PRECISION_FLAGS:
        raise ValueError(
            f"unknown precision level {level!r}; expected one of {', '.join(PRECISION_FLAGS)}"
        )
    return f"{indent}# kernelevo: precision = {level}"


def _top_function(a: Analysis, name: str) -> ast.FunctionDef | None:
    for stmt in a.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    return None


def _literal_len(fn: ast.FunctionDef | None) -> int | None:
    if fn is None:
        return 0
    for stmt in fn.body:
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, (ast.List, ast.Tuple)):
            return len(stmt.value.elts)
    return None


def _from_get_inputs(a: Analysis, ref: Reference) -> ExampleInputs | None:
    get_inputs = _top_function(a, "get_inputs")
    if get_inputs is None or get_inputs.args.args or get_inputs.args.posonlyargs:
        return None  # KernelBench's get_inputs() takes nothing; one with parameters is the file's own helper
    get_init = _top_function(a, "get_init_inputs")
    owners = [t for t in a.targets if t.kind in ("module", "function", "triton_launcher")]
    fits = ref.name == "Model" or len(owners) == 1
    if not fits:
        n_in, n_init = _literal_len(get_inputs), _literal_len(get_init)
        n_args = len(required_params(ref.call, ref.kind == "class"))
        n_ctor = len(_ctor_params(ref))
        fits = n_in == n_args and n_init == n_ctor
    if not fits:
        return None
    statements: list[ast.stmt] = [get_inputs]
    if get_init is not None:
        statements.append(get_init)
    for stmt in a.body:
        bound = {t.id for t in getattr(stmt, "targets", []) if isinstance(t, ast.Name)}
        if isinstance(stmt, ast.FunctionDef):
            bound = {stmt.name}
        if bound & set(HINT_NAMES):
            statements.append(stmt)
    code = "" if get_init is not None else "def get_init_inputs():\n    return []\n"
    uses = set().union(*(_names(s) for s in statements))
    if "SMALL" in uses or any(
        "SMALL" in {t.id for t in getattr(s, "targets", []) if isinstance(t, ast.Name)}
        for s in statements
    ):
        for stmt in statements:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict):
                uses |= {
                    k.value
                    for k in stmt.value.keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)
                }
    return ExampleInputs(
        "get_inputs", code, f"get_inputs() at {a.path}:{get_inputs.lineno}", uses, statements
    )


@dataclass
class InputGuess:
    """The first guess at a target's example inputs, for a person to correct (the editor's
    input box, the error's suggested lines)."""

    inputs: str  # a Python expression for the call's arguments, e.g. "(torch.randn(8, 1024),)"
    init: str | None  # the constructor's arguments, when it needs some
    params: list[str]
    init_params: list[str]
    line: int  # 1-based first line of the target (its decorators included)

    def comment_lines(self, indent: str = "") -> list[str]:
        """The `# kernelevo:` comments `_from_comments` reads, to put just above the target."""
        lines = [f"{indent}# kernelevo: inputs = {self.inputs}"]
        if self.init is not None:
            lines.append(f"{indent}# kernelevo: init = {self.init}")
        return lines


def guess_inputs(a: Analysis, ref: Reference) -> InputGuess:
    args = required_args(ref.call, ref.kind == "class")
    ctor = _ctor_args(ref) if _needs_init(ref) else []
    doc = "\n".join(
        ast.get_docstring(n) or ""
        for n in (ref.call, ref.node)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    )
    shapes = documented_shapes(doc, [x.arg for x in args], [])
    values = []
    for x in args:
        pair, placeholder = _int_tuple(x.annotation), _placeholder(x, False)
        if pair:  # `q_size: Tuple[int, int]`: sizes, not a tensor
            values.append(repr(shapes.get(x.arg) or (8,) * pair))
        elif x.arg in shapes and placeholder == "torch.randn(8, 1024)":
            values.append(f"torch.randn{shapes[x.arg]}")
        else:
            values.append(placeholder)
    return InputGuess(
        inputs=_tuple_text(values or ["torch.randn(8, 1024)"]),
        init=_init_text(ref, ctor),
        params=[x.arg for x in args] or ["x"],
        init_params=[x.arg for x in ctor],
        line=min([ref.node.lineno] + [d.lineno for d in ref.node.decorator_list]),
    )


def suggestion(a: Analysis, ref: Reference) -> str:
    """The exact lines to add, named after the target's own parameters."""
    g = guess_inputs(a, ref)
    init = f", init=lambda: {g.init}" if g.init else ""
    meaning = f"arguments ({', '.join(g.params)})" + (
        f", constructor arguments ({', '.join(g.init_params)})" if g.init_params else ""
    )
    return (
        f"{a.path}:{g.line}: no example inputs for {ref.qualname}; add `@kernelevo.example(lambda: {g.inputs}{init})` "
        f"above it (with `import kernelevo`; shapes and dtypes as in real use for {meaning}), or add "
        "KernelBench-style get_inputs()/get_init_inputs() to the file, or pass --script SCRIPT that runs this "
        "code so its shapes are captured"
    )


def _init_text(ref: Reference, ctor: list[ast.arg]) -> str | None:
    """The constructor's arguments to suggest: `dict(name=value, ...)` where some are taken by
    keyword only, a tuple otherwise."""
    if not ctor:
        return None
    if _by_name(ref):
        return f"dict({', '.join(f'{x.arg}={_placeholder(x, True)}' for x in ctor)})"
    return _tuple_text([_placeholder(x, True) for x in ctor])


def _tuple_text(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
