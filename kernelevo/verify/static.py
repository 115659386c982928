"""Source checks on a candidate, before anything runs.

They catch the cheap reward hacks (fallbacks, inheritance, escapes from the timer,
patched timers) with a reason a model can act on, and tell which backend is used. Python
is held to an allowlist (imports, no dunder attributes, no dynamic-access builtins):
a fast first filter before any GPU; the worker's sandbox and the judge are the guarantee.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from kernelevo.ast_names import dotted_name, parse_module, resolved_name
from kernelevo.verdict import Check
from kernelevo.verify.native import check_native
from kernelevo.verify.static_access import access_problems
from kernelevo.verify.static_rules import (
    ALLOWED_DUNDERS,
    ALLOWED_IMPORTS,
    BANNED_BUILTINS,
    DUNDER_HOOKS,
    FORBIDDEN_CALLS,
    FORBIDDEN_MODULES,
    NUMPY_CONSTANTS,
    NUMPY_LITERAL_MATH,
    NUMPY_SCALARS,
    OPERATOR_REGISTRATION,
    PATCH_ROOTS,
    REACHABLE_MODULES,
    TENSOR_BASES,
    assignment_problem,
    import_allowed,
    private_part,
    registers_operators,
)

__all__ = ["StaticReport", "check_source"]


@dataclass
class StaticReport:
    backend: str
    checks: list[Check] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    syntax_error: str | None = None
    jit_kernels: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and self.syntax_error is None


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> full dotted name, from imports anywhere in the file."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


_QUIET_CALLS = {"print", "warnings.warn", "logging.warning", "logging.info", "logging.debug"}


def _calls(nodes: list[ast.stmt]) -> list[ast.Call]:
    return [n for stmt in nodes for n in ast.walk(stmt) if isinstance(n, ast.Call)]


def _try_problem(node: ast.Try, launchers: set[str], aliases: dict[str, str]) -> str | None:
    """A try/except is refused only when a handler computes the result another way or swallows a
    kernel's error; import guards and configuration guards (device queries, constants) pass."""
    if all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in node.body):
        return None

    def launches_kernel(call: ast.Call) -> bool:
        f = call.func
        if isinstance(f, ast.Subscript):
            return True  # kernel[grid](...)
        root = dotted_name(f).split(".")[0]
        return root in launchers or root == "self"

    launching = any(launches_kernel(c) for c in _calls(node.body))
    for h in node.handlers:
        if any(isinstance(s, ast.Raise) for s in h.body):
            continue
        computing = [
            n for s in h.body for n in ast.walk(s) if isinstance(n, (ast.Return, ast.Yield))
        ] + [
            c
            for c in _calls(h.body)
            if resolved_name(dotted_name(c.func), aliases) not in _QUIET_CALLS
        ]
        if computing:
            return (
                f"the except handler at line {h.lineno} computes a result another way (line "
                f"{computing[0].lineno}): a fallback hides a failing kernel; let errors surface"
            )
        if launching:
            return (
                f"the except handler at line {h.lineno} swallows errors from a kernel launch in its try "
                "block: a failing kernel must fail the candidate; let errors surface"
            )
    return None


def _dunder_problem(node: ast.Attribute) -> str | None:
    if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in ALLOWED_DUNDERS:
        return f"attribute {node.attr} is off limits: dunder attributes reach the interpreter's internals"
    return None


def _private_problem(name: str) -> str:
    return (
        f"{name} is not allowed: private internals (torch's dispatcher and the op recorder's "
        "modes, typing's evaluator...) are off limits; use the public APIs"
    )


def _registration_problem(api: str) -> str:
    return (
        f"{api} is not allowed: an operator registered by the candidate runs its body unseen by "
        "the op recorder; launch the kernels from forward directly"
    )


def _literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    if isinstance(node, ast.BinOp):
        return _literal(node.left) and _literal(node.right)
    return False


def _called_on_literals(tree: ast.Module) -> set[int]:
    """The attributes called on literal numbers only (`np.log2(8)`): maths that touches no data."""
    return {
        id(node.func)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and not node.keywords
        and node.args
        and all(_literal(a) for a in node.args)
    }


def check_source(source: str, filename: str = "candidate.py") -> StaticReport:
    """All source checks on one candidate file, in milliseconds; each problem names the line."""
    try:
        tree = parse_module(source, filename)
    except SyntaxError as exc:
        return StaticReport(
            backend="unknown", syntax_error=f"{filename}:{exc.lineno}: syntax error: {exc.msg}"
        )
    aliases = _aliases(tree)
    on_literals = _called_on_literals(tree)
    problems: list[str] = []  # the specific hacks first: their reason is the verdict's
    refused: list[str] = []  # then what the allowlist refuses

    def bad(node: ast.AST, msg: str, into: list[str] = problems) -> None:
        into.append(f"line {getattr(node, 'lineno', '?')}: {msg}")

    jit_kernels: list[str] = []
    uses_cuda_helper = uses_inline = False
    model_new: ast.ClassDef | None = None
    launchers = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            callee = resolved_name(dotted_name(node.value.func), aliases)
            if callee.endswith(("load_inline", "cpp_extension.load", "kernelevo.cuda.compile")):
                launchers |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                full = resolved_name(dotted_name(target), aliases)
                if full in ("triton.jit", "triton.runtime.jit.jit", "triton.runtime.jit"):
                    jit_kernels.append(node.name)
            if node.name in DUNDER_HOOKS:
                bad(
                    node,
                    f"{node.name} hooks are not allowed: a candidate returns plain tensors (tensor subclasses "
                    "can compute lazily)",
                )
        elif isinstance(node, ast.ClassDef):
            bases = [resolved_name(dotted_name(b), aliases) for b in node.bases]
            if node.name == "ModelNew":
                model_new = node
                if any(b.split(".")[-1] == "Model" for b in bases):
                    bad(
                        node,
                        "ModelNew subclasses Model: a candidate must implement forward itself, not inherit "
                        "the reference",
                    )
            if any(b in TENSOR_BASES or b.endswith("torch.Tensor") for b in bases):
                bad(
                    node,
                    f"class {node.name} subclasses torch.Tensor: tensor subclasses can compute lazily and are "
                    "not allowed",
                )
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            if isinstance(node, ast.ImportFrom) and not import_allowed(node.module or ""):
                mods = [f"{node.module}.{a.name}" for a in node.names]  # from kernelevo import cuda
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.name in REACHABLE_MODULES and not node.level:
                        bad(
                            node,
                            f"from {node.module} import {a.name} is not allowed: it reaches the "
                            f"{a.name} module around the import allowlist",
                        )
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                names = mods
            for private in sorted({p for p in map(private_part, names) if p}):
                bad(node, _private_problem(private))
            for api in sorted({r for r in map(registers_operators, names) if r}):
                bad(node, _registration_problem(api))
            for m in mods:
                root = m.split(".")[0]
                if root in FORBIDDEN_MODULES:
                    bad(node, f"import of {root}: {FORBIDDEN_MODULES[root]}")
                elif not import_allowed(m) and not (
                    isinstance(node, ast.ImportFrom) and node.level
                ):
                    bad(
                        node,
                        f"import of {m} is not allowed: a candidate imports only "
                        f"{', '.join(ALLOWED_IMPORTS[:4])} and pure helpers (typing, functools...)",
                        refused,
                    )
            if isinstance(node, ast.ImportFrom) and (
                node.level or not import_allowed(node.module or "")
            ):
                if any(a.name == "Model" for a in node.names):
                    bad(node, "imports Model: a candidate must not use the reference module")
                elif node.level:
                    bad(
                        node,
                        "relative imports are not allowed: a candidate is one self-contained file",
                        refused,
                    )
        elif isinstance(node, ast.Try) or (
            hasattr(ast, "TryStar") and isinstance(node, ast.TryStar)
        ):
            why = _try_problem(node, launchers | set(jit_kernels), aliases)  # type: ignore[arg-type]
            if why:
                bad(node, f"try/except: {why}")
        elif isinstance(node, ast.Call):
            full = resolved_name(dotted_name(node.func), aliases)
            if full in FORBIDDEN_CALLS or (
                full.split(".")[-1] in ("Stream", "ExternalStream") and full.startswith("torch")
            ):
                bad(node, f"{full}: {FORBIDDEN_CALLS.get(full, 'side streams escape the timer')}")
            elif (
                isinstance(node.func, ast.Name)
                and node.func.id in BANNED_BUILTINS
                and node.func.id not in aliases
            ):
                what = node.func.id
                on = (
                    f" on {dotted_name(node.args[0]) or 'an object'}"
                    if node.args and what.endswith("attr")
                    else ""
                )
                bad(
                    node,
                    f"{what}(){on} is not allowed: it {BANNED_BUILTINS[what]}; "
                    "name library functions and attributes directly",
                    problems if on else refused,
                )
            if full.endswith("cpp_extension.load_inline") or full == "load_inline":
                uses_inline = True
            if full in ("kernelevo.cuda.compile",) or (
                full.endswith(".compile")
                and resolved_name(full.rsplit(".", 1)[0], aliases) == "kernelevo.cuda"
            ):
                uses_cuda_helper = True
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Attribute):
                        root = dotted_name(sub).split(".")[0]
                        if root and (
                            root in PATCH_ROOTS
                            or resolved_name(root, aliases).split(".")[0] in PATCH_ROOTS
                        ):
                            bad(node, assignment_problem(resolved_name(dotted_name(sub), aliases)))
        elif isinstance(node, ast.Attribute):
            full = resolved_name(dotted_name(node), aliases)
            if (
                isinstance(node.value, ast.Name)
                and resolved_name(node.value.id, aliases) == "numpy"
                and node.attr not in NUMPY_SCALARS
                and node.attr not in NUMPY_CONSTANTS
                and not (node.attr in NUMPY_LITERAL_MATH and id(node) in on_literals)
            ):
                bad(
                    node,
                    f"numpy.{node.attr} is not allowed: numpy serves only the CUDA helper's scalar types "
                    "(np.int32, np.float32...) and maths on literal numbers (np.log2(8)); compute on "
                    "the GPU",
                    refused,
                )
            elif node.attr in REACHABLE_MODULES and import_allowed(
                resolved_name(dotted_name(node.value), aliases)
            ):
                bad(
                    node,
                    f"{dotted_name(node)} is not allowed: it reaches the {node.attr} module around the "
                    "import allowlist",
                )
            elif node.attr.startswith("_") and private_part(full) == full:
                bad(node, _private_problem(full))
            elif full in OPERATOR_REGISTRATION:
                bad(node, _registration_problem(full))
            elif dotted_name(node) in ("sys.modules",):
                bad(node, f"{dotted_name(node)} is off limits for a candidate")
            elif _dunder_problem(node):
                bad(node, _dunder_problem(node) or "", refused)
    problems += access_problems(tree, aliases)
    problems += check_native(tree)
    problems += refused
    if model_new is None:
        problems.append(
            "no class ModelNew: a candidate defines class ModelNew(nn.Module) with Model's constructor and forward"
        )
    backend = (
        "cuda"
        if uses_cuda_helper
        else "cuda_inline"
        if uses_inline
        else "triton"
        if jit_kernels
        else "none"
    )
    if backend == "none":
        problems.append(
            "no kernel: define a @triton.jit kernel, or compile CUDA with kernelevo.cuda.compile or load_inline"
        )
    checks = [
        Check(
            "static.backend",
            backend != "none",
            f"backend: {backend}",
            {"backend": backend, "triton_kernels": jit_kernels},
        ),
        Check(
            "static.forbidden_patterns",
            not problems,
            "; ".join(problems) or "no forbidden patterns",
            {"problems": problems},
        ),
    ]
    return StaticReport(backend=backend, checks=checks, problems=problems, jit_kernels=jit_kernels)
