"""Source checks on a candidate, before anything runs.

They catch the cheap reward hacks (fallbacks, inheritance, escapes from the timer,
patched timers) with a reason a model can act on, and tell which backend is used.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from kernelevo.ast_names import dotted_name
from kernelevo.verdict import Check

FORBIDDEN_MODULES = {
    "threading": "threads escape the timer and the checks",
    "_thread": "threads escape the timer and the checks",
    "multiprocessing": "processes escape the timer and the checks",
    "concurrent": "thread/process pools escape the timer and the checks",
    "subprocess": "subprocesses are not allowed in a candidate",
    "socket": "network access is not allowed in a candidate",
    "asyncio": "background tasks escape the timer",
    "signal": "signal handlers are not allowed in a candidate",
    "ctypes": "raw memory access through ctypes is not allowed",
    "pickle": "loading pickled results is not allowed",
    "importlib": "dynamic imports are not allowed in a candidate",
    "faulthandler": "fault handlers are not allowed in a candidate",
    "gc": "reaching other objects through the garbage collector is not allowed",
    "inspect": "inspecting the harness is not allowed in a candidate",
    "requests": "network access is not allowed in a candidate",
    "urllib": "network access is not allowed in a candidate",
    "http": "network access is not allowed in a candidate",
}
FORBIDDEN_CALLS = {
    "os.system": "running shell commands is not allowed",
    "os.fork": "forking is not allowed",
    "os.popen": "running shell commands is not allowed",
    "os.kill": "signalling processes is not allowed",
    "os._exit": "exiting the process is not allowed",
    "os.abort": "aborting the process is not allowed",
    "os.killpg": "signalling processes is not allowed",
    "sys.exit": "exiting the process is not allowed",
    "torch.cuda.Stream": "side streams escape the timer; launch on torch's current stream",
    "torch.cuda.stream": "side streams escape the timer; launch on torch's current stream",
    "torch.cuda.ExternalStream": "side streams escape the timer; launch on torch's current stream",
    "torch.Stream": "side streams escape the timer; launch on torch's current stream",
    "torch.compile": "torch.compile is the baseline, not a kernel",
    "torch.jit.script": "TorchScript is not a kernel",
    "eval": "eval is not allowed in a candidate",
    "exec": "exec is not allowed in a candidate",
    "__import__": "dynamic imports are not allowed in a candidate",
    "importlib.import_module": "dynamic imports are not allowed in a candidate",
}
PATCH_ROOTS = ("torch", "triton", "tl", "time", "np", "numpy", "F", "nn", "builtins", "os", "sys", "math")
TENSOR_BASES = {"torch.Tensor", "Tensor"}
DUNDER_HOOKS = {"__torch_function__", "__torch_dispatch__"}


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


def _resolve(name: str, aliases: dict[str, str]) -> str:
    head, _, rest = name.partition(".")
    full = aliases.get(head, head)
    return f"{full}.{rest}" if rest else full


def check_source(source: str, filename: str = "candidate.py") -> StaticReport:
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return StaticReport(backend="unknown", syntax_error=f"{filename}:{exc.lineno}: syntax error: {exc.msg}")
    aliases = _aliases(tree)
    problems: list[str] = []

    def bad(node: ast.AST, msg: str) -> None:
        problems.append(f"line {getattr(node, 'lineno', '?')}: {msg}")

    jit_kernels: list[str] = []
    uses_cuda_helper = uses_inline = False
    model_new: ast.ClassDef | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                full = _resolve(dotted_name(target), aliases)
                if full in ("triton.jit", "triton.runtime.jit.jit", "triton.runtime.jit"):
                    jit_kernels.append(node.name)
            if node.name in DUNDER_HOOKS:
                bad(node, f"{node.name} hooks are not allowed: a candidate returns plain tensors (tensor subclasses can compute lazily)")
        elif isinstance(node, ast.ClassDef):
            bases = [_resolve(dotted_name(b), aliases) for b in node.bases]
            if node.name == "ModelNew":
                model_new = node
                if any(b.split(".")[-1] == "Model" for b in bases):
                    bad(node, "ModelNew subclasses Model: a candidate must implement forward itself, not inherit the reference")
            if any(b in TENSOR_BASES or b.endswith("torch.Tensor") for b in bases):
                bad(node, f"class {node.name} subclasses torch.Tensor: tensor subclasses can compute lazily and are not allowed")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for m in mods:
                root = m.split(".")[0]
                if root in FORBIDDEN_MODULES:
                    bad(node, f"import of {root}: {FORBIDDEN_MODULES[root]}")
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] not in ("torch", "triton", "numpy", "math", "kernelevo", "typing", "__future__", "functools", "dataclasses"):
                if any(a.name == "Model" for a in node.names):
                    bad(node, "imports Model: a candidate must not use the reference module")
        elif isinstance(node, ast.Try) or (hasattr(ast, "TryStar") and isinstance(node, getattr(ast, "TryStar"))):
            if not all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in node.body):
                bad(node, "try/except is not allowed: a fallback to PyTorch hides a failing kernel; let errors surface")
        elif isinstance(node, ast.Call):
            full = _resolve(dotted_name(node.func), aliases)
            if full in FORBIDDEN_CALLS or full.split(".")[-1] in ("Stream", "ExternalStream") and full.startswith("torch"):
                bad(node, f"{full}: {FORBIDDEN_CALLS.get(full, 'side streams escape the timer')}")
            if full in ("getattr", "builtins.getattr") and len(node.args) >= 2 and not (
                    isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                    and node.args[1].value not in ("Stream", "ExternalStream", "stream")):
                root = _resolve(dotted_name(node.args[0]).split(".")[0], aliases).split(".")[0]
                if root in PATCH_ROOTS or isinstance(node.args[1], ast.Constant):
                    bad(node, f"getattr on {dotted_name(node.args[0]) or 'an object'} with a computed or stream name: "
                              "reach library functions directly")
            if full in ("setattr", "builtins.setattr") and node.args:
                root = dotted_name(node.args[0]).split(".")[0]
                if root in PATCH_ROOTS or _resolve(root, aliases).split(".")[0] in PATCH_ROOTS:
                    bad(node, f"setattr on {dotted_name(node.args[0])}: patching library objects is not allowed")
            if full.endswith("cpp_extension.load_inline") or full == "load_inline":
                uses_inline = True
            if full in ("kernelevo.cuda.compile",) or (full.endswith(".compile") and _resolve(full.rsplit(".", 1)[0], aliases) == "kernelevo.cuda"):
                uses_cuda_helper = True
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Attribute):
                        root = dotted_name(sub).split(".")[0]
                        if root and (root in PATCH_ROOTS or _resolve(root, aliases).split(".")[0] in PATCH_ROOTS):
                            bad(node, f"assignment to {dotted_name(sub)}: patching library attributes (timers, events, allclose) is not allowed")
        elif isinstance(node, ast.Attribute) and dotted_name(node) in ("sys.modules",):
            bad(node, f"{dotted_name(node)} is off limits for a candidate")

    if model_new is None:
        problems.append("no class ModelNew: a candidate defines class ModelNew(nn.Module) with Model's constructor and forward")
    backend = "cuda" if uses_cuda_helper else "cuda_inline" if uses_inline else "triton" if jit_kernels else "none"
    if backend == "none":
        problems.append("no kernel: define a @triton.jit kernel, or compile CUDA with kernelevo.cuda.compile or load_inline")
    checks = [
        Check("static.backend", backend != "none", f"backend: {backend}", {"backend": backend, "triton_kernels": jit_kernels}),
        Check("static.forbidden_patterns", not problems, "; ".join(problems) or "no forbidden patterns",
              {"problems": problems}),
    ]
    return StaticReport(backend=backend, checks=checks, problems=problems, jit_kernels=jit_kernels)
