"""Building a self-contained KernelBench-format task from a target in a user's file.

The reference is the user's own code, copied verbatim with exactly what it needs from the
file (imports, constants, helpers), so the search optimises what the user runs, and the task
keeps working when the user's file changes. Nothing here imports torch; the check that the
task runs happens in a child process (`task_check`).
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import os
import re
import subprocess
import symtable
import sys
import time
from dataclasses import dataclass, field

from kernelevo.targets.analysis import Analysis
from kernelevo.targets.detect import analyze_file
from kernelevo.targets.imports import resolve_expr
from kernelevo.targets.input_sources import from_signature, from_workspace
from kernelevo.targets.inputs import (
    PRECISION_FLAGS,
    ExampleInputs,
    NoExampleInputs,
    accepted_precision,
    find_inputs,
    suggestion,
)
from kernelevo.targets.model import Target
from kernelevo.targets.reference import NoReference, Reference, resolve_reference

RESERVED = ("Model", "get_inputs", "get_init_inputs", "_kernelevo_list")
ORIGIN_KEYS = (
    "Source file",
    "Target id",
    "Source hash",
    "Inputs from",
    "sys.path root",
    "CPU sizes",
)


class ExtractError(Exception):
    """The target cannot become a task; the message names file:line and what to do."""


@dataclass
class BuiltTask:
    text: str
    target: Target
    reference: str
    inputs: str
    path: str | None = None
    notes: list[str] = field(default_factory=list)
    small_check: TaskCheck | None = None  # the run at the derived small sizes, when there was one


@dataclass
class TaskCheck:
    ok: bool | None  # None: could not be checked here (e.g. needs a CUDA GPU)
    message: str
    detail: dict = field(default_factory=dict)
    elapsed_s: float = 0.0


def find_target(a: Analysis, key: str) -> Target:
    t = a.detection().find(key)
    if t is None:
        names = ", ".join(t.qualname for t in a.targets) or "none"
        extra = f" ({'; '.join(a.errors)})" if a.errors else ""
        raise ExtractError(f"{a.path}: no target {key!r}; targets here: {names}{extra}")
    return t


def build_task(
    user_file: str,
    key: str,
    script: str | None = None,
    out_dir: str | None = None,
    write: bool = True,
    timeout: float = 300.0,
) -> BuiltTask:
    """Extract target `key` (id, qualname or name) from `user_file` into a task file."""
    if not os.path.isfile(user_file):
        raise ExtractError(f"{user_file}: no such file")
    if user_file.endswith((".cu", ".cuh")):
        user_file, key = _launcher_file_for(user_file, key)
    a = analyze_file(user_file)
    t = find_target(a, key)
    out = out_dir or os.path.join(os.getcwd(), ".kernelevo", "tasks")
    path = task_path_for(out, user_file, t)
    try:
        ref = resolve_reference(a, t)
        inputs = find_inputs(a, ref, script, timeout)
        if inputs is None:
            inputs = _found_inputs(a, t, ref, path, timeout)
    except (NoReference, NoExampleInputs) as exc:
        raise ExtractError(str(exc)) from exc
    text = task_source(a, t, ref, inputs)
    built = BuiltTask(text, t, ref.qualname, inputs.note)
    if write:
        os.makedirs(out, exist_ok=True)
        built.path = path
        _write(built.path, text)
        if inputs.small.sizes:  # keep the derived small sizes only if the task runs on them
            small = built.small_check = check_task(
                built.path, timeout=min(timeout, 120.0), small=True
            )
            if small.ok is False:
                inputs.small.failed = small.message.split(": ", 1)[-1]
                built.text = text = task_source(a, t, ref, inputs)
                _write(built.path, text)
            built.inputs += f"; CPU sizes {inputs.small.describe()}"
        if inputs.init_blob:  # the same data, beside the task, for people to inspect
            with open(os.path.splitext(built.path)[0] + ".init.pt", "wb") as fh:
                fh.write(base64.b64decode(inputs.init_blob))
        from kernelevo.task import TaskError, read_task

        try:
            read_task(built.path)
        except TaskError as exc:
            raise ExtractError(f"built task is malformed (a KernelEvo bug): {exc}") from exc
    return built


def _write(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def task_path_for(out: str, user_file: str, t: Target) -> str:
    """One task file per (file, target): two `model.py` in different folders never share one."""
    stem = os.path.splitext(os.path.basename(user_file))[0]
    where = hashlib.sha1(os.path.realpath(user_file).encode()).hexdigest()[:6]
    return os.path.join(out, f"{stem}__{re.sub(r'[^A-Za-z0-9_]', '_', t.qualname)}__{where}.py")


_PROBE_INPUTS = "def get_inputs():\n    return []\n\n\ndef get_init_inputs():\n    return []\n"


def _found_inputs(
    a: Analysis, t: Target, ref: Reference, path: str, timeout: float
) -> ExampleInputs:
    """No inputs written by the user: capture them from the workspace, else guess from the signature."""
    reasons: list[str] = []
    budget = min(timeout, 60.0)
    found = from_workspace(a, ref, budget, reasons)
    if found is None:
        draft = task_source(a, t, ref, ExampleInputs("probe", _PROBE_INPUTS, "being guessed"))
        found = from_signature(draft, a.path, path, ref, budget, reasons)
    if found is None:
        raise NoExampleInputs(f"{suggestion(a, ref)}. Tried without edits: " + "; ".join(reasons))
    return found


def task_origin(task_path: str) -> dict[str, str]:
    """Where a task built by `kernelevo task` came from, read back from its header (empty if not one)."""
    try:
        with open(task_path, encoding="utf-8") as fh:
            head = fh.read(4000)
    except OSError:
        return {}
    if not head.startswith('"""KernelEvo task:'):
        return {}
    head = head.split('"""', 2)[1]
    out: dict[str, str] = {}
    for line in head.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key in ORIGIN_KEYS:
            out[key] = value.strip()
    return out


def reusable_task(
    user_file: str, key: str, out_dir: str | None = None
) -> tuple[str, Target] | None:
    """The task built before for this target, if its code has not changed since."""
    if not os.path.isfile(user_file) or user_file.endswith((".cu", ".cuh")):
        return None
    a = analyze_file(user_file)
    t = a.detection().find(key)
    if t is None:
        return None
    path = task_path_for(out_dir or os.path.join(os.getcwd(), ".kernelevo", "tasks"), user_file, t)
    origin = task_origin(path)
    if origin.get("Source hash") == t.source_hash and origin.get("Target id") == t.id:
        return path, t
    return None


def _launcher_file_for(cu_file: str, key: str) -> tuple[str, str]:
    """A .cu kernel's reference lives in the Python file next to it that compiles it."""
    base = os.path.basename(cu_file)
    folder = os.path.dirname(os.path.abspath(cu_file))
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            path = os.path.join(os.path.dirname(cu_file), name)
            with open(path, encoding="utf-8", errors="replace") as fh:
                if base not in fh.read():
                    continue
            for t in analyze_file(path).targets:
                if t.kind == "cuda_file" and os.path.basename(t.qualname) == base:
                    return path, t.id
    raise ExtractError(
        f"{cu_file}:1: no Python file next to it compiles {base}; add a launcher that loads it "
        f"(e.g. torch.utils.cpp_extension.load(sources=[...]))"
    )


def _bindings(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
        return set()
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"}
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(stmt, (ast.If, ast.Try, ast.With)):
        if (
            isinstance(stmt, ast.If)
            and isinstance(stmt.test, ast.Compare)
            and isinstance(stmt.test.left, ast.Name)
            and stmt.test.left.id == "__name__"
        ):
            return set()
        inner = (
            list(stmt.body)
            + list(getattr(stmt, "orelse", []))
            + list(getattr(stmt, "finalbody", []))
        )
        for h in getattr(stmt, "handlers", []):
            inner.extend(h.body)
        return set().union(*(_bindings(s) for s in inner)) if inner else set()
    return set()


def _uses(node: ast.AST, skip: set[int] = frozenset()) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in skip:
            continue
        if isinstance(n, ast.Name):
            out.add(n.id)
        stack.extend(ast.iter_child_nodes(n))
    return out


def free_names(text: str) -> set[str] | None:
    """Names `text` (one definition) reads from the module's globals, from Python's own scoping:
    a parameter or local named like a module-level variable does not pull that variable in.
    None when the text is not a definition symtable can read."""
    try:
        top = symtable.symtable(text, "<target>", "exec")
    except (SyntaxError, ValueError):
        return None
    out: set[str] = set()
    stack = [(top, True)]
    while stack:
        table, is_top = stack.pop()
        for sym in table.get_symbols():
            if not sym.is_referenced():
                continue
            if is_top:
                if not sym.is_imported() and not (sym.is_assigned() and not sym.is_referenced()):
                    out.add(sym.get_name())
            elif sym.is_global() or (
                table.get_type() == "class" and not sym.is_assigned() and not sym.is_local()
            ):
                out.add(sym.get_name())
        stack.extend((child, False) for child in table.get_children())
    return out


def _needs(a: Analysis, stmt: ast.stmt, skip: set[int] = frozenset()) -> set[str]:
    """What a statement needs from the file: free names for definitions, every name otherwise."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not skip:
        names = free_names(_dedented(a, stmt))
        if names is not None:
            return names
    return _uses(stmt, skip)


def _dedented(a: Analysis, node: ast.AST) -> str:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
    indent = node.col_offset
    return "\n".join(
        line[indent:] if line[:indent].strip() == "" else line
        for line in (ln.rstrip("\r") for ln in a.lines[first : node.end_lineno])
    )


def _closure(a: Analysis, wanted: set[str], exclude: set[int]) -> list[ast.stmt]:
    index: dict[str, list[ast.stmt]] = {}
    for stmt in a.body:
        if id(stmt) in exclude:
            continue
        for name in _bindings(stmt):
            index.setdefault(name, []).append(stmt)
    chosen: dict[int, ast.stmt] = {}
    todo = list(wanted)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for stmt in index.get(name, []):
            if id(stmt) not in chosen:
                chosen[id(stmt)] = stmt
                todo.extend(_needs(a, stmt) - seen)
    return sorted(chosen.values(), key=lambda s: s.lineno)


def _stmt_text(a: Analysis, stmt: ast.stmt) -> str:
    first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
    return "\n".join(a.lines[first - 1 : stmt.end_lineno]).rstrip()


def _example_decorators(a: Analysis, node: ast.AST) -> list[ast.expr]:
    out = []
    for dec in getattr(node, "decorator_list", []):
        target = dec.func if isinstance(dec, ast.Call) else dec
        if resolve_expr(target, a.aliases) == "kernelevo.example":
            out.append(dec)
    return out


def reference_text(a: Analysis, ref: Reference) -> str:
    """The reference's own lines, dedented to top level, without @kernelevo.example."""
    node = ref.node
    drop: set[int] = set()
    for dec in _example_decorators(a, node):
        drop.update(range(dec.lineno - 1, dec.end_lineno))
    first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    indent = node.col_offset
    lines = []
    for i in range(first, node.end_lineno):
        if i in drop:
            continue
        line = a.lines[i].rstrip("\r")
        lines.append(line[indent:] if line[:indent].strip() == "" else line)
    return "\n".join(lines)


def _call_args(fn: ast.FunctionDef, skip_self: bool) -> tuple[str, str]:
    """(signature text, call text) for forwarding every argument of `fn`."""
    args = fn.args
    sig_args = ast.arguments(
        posonlyargs=[],
        args=list(args.posonlyargs) + list(args.args),
        vararg=args.vararg,
        kwonlyargs=args.kwonlyargs,
        kw_defaults=args.kw_defaults,
        kwarg=args.kwarg,
        defaults=args.defaults,
    )
    names = [p.arg for p in sig_args.args]
    if skip_self and names:
        names = names[1:]
        sig_args.args = sig_args.args[1:]
    call = list(names)
    if args.vararg:
        call.append("*" + args.vararg.arg)
    call += [f"{k.arg}={k.arg}" for k in args.kwonlyargs]
    if args.kwarg:
        call.append("**" + args.kwarg.arg)
    return ast.unparse(sig_args), ", ".join(call)


def _localize(a: Analysis, stmt: ast.stmt, paths: set[str]) -> str:
    """Imports of the user's own modules: relative ones made absolute, their root put on sys.path."""
    if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return _stmt_text(a, stmt)
    folder = os.path.dirname(os.path.abspath(a.path))
    if isinstance(stmt, ast.ImportFrom) and stmt.level:
        pkg = []
        root = folder
        while os.path.exists(os.path.join(root, "__init__.py")):
            pkg.insert(0, os.path.basename(root))
            root = os.path.dirname(root)
        if len(pkg) < stmt.level:
            dots = "." * stmt.level
            raise ExtractError(
                f"{a.path}:{stmt.lineno}: the target needs `from {dots}{stmt.module or ''} import ...`, a "
                "relative import, "
                f"but {os.path.dirname(os.path.abspath(a.path))} is not a package (no __init__.py up to that level); "
                "build the task from the package's own checkout, or pick a target that does not need that import"
            )
        base = pkg[: len(pkg) - stmt.level + 1]
        module = ".".join(base + ([stmt.module] if stmt.module else []))
        paths.add(root)
        return ast.unparse(ast.ImportFrom(module=module, names=stmt.names, level=0))
    tops = (
        [n.name.split(".")[0] for n in stmt.names]
        if isinstance(stmt, ast.Import)
        else [stmt.module.split(".")[0]]
    )
    for top in tops:
        if os.path.exists(os.path.join(folder, top + ".py")) or os.path.isdir(
            os.path.join(folder, top)
        ):
            paths.add(folder)
        root = _package_parent(folder, top)
        if root is not None:
            paths.add(root)
    return _stmt_text(a, stmt)


def _package_parent(folder: str, top: str) -> str | None:
    """The folder to put on sys.path so that `import top` finds the user's own package, when
    the file sits inside it (mingpt/model.py importing mingpt.utils)."""
    while os.path.exists(os.path.join(folder, "__init__.py")):
        parent = os.path.dirname(folder)
        if os.path.basename(folder) == top:
            return parent
        folder = parent
    return None


def task_source(a: Analysis, t: Target, ref: Reference, inputs: ExampleInputs) -> str:
    skip = {id(d) for d in _example_decorators(a, ref.node)}
    own = free_names(reference_text(a, ref)) if ref.node.col_offset == 0 or not skip else None
    wanted = (own if own is not None else _uses(ref.node, skip)) | inputs.uses
    for stmt in inputs.statements:
        wanted |= _uses(stmt)
    top = next((s for s in a.body if s.lineno <= ref.node.lineno <= s.end_lineno), None)
    exclude = {id(ref.node), id(top)} | {id(s) for s in inputs.statements}
    if ref.kind == "class" and top is not ref.node:
        exclude.discard(id(top))  # a nested class may use its outer class's other members
    closure = [s for s in _closure(a, wanted, exclude) if s is not ref.node]
    clash = (
        set(RESERVED) & set().union(*(_bindings(s) for s in closure), {ref.name} - {"Model"})
        if closure
        else set()
    )
    if clash - {"Model"} or ("Model" in clash and ref.name != "Model"):
        raise ExtractError(
            f"{t.location()}: the file defines {', '.join(sorted(clash))}, names a task reserves"
        )
    paths: set[str] = set()
    body = [_localize(a, s, paths) for s in closure]
    bound = set().union(*(_bindings(s) for s in closure)) if closure else set()
    head = [
        f'"""KernelEvo task: {ref.qualname} from {os.path.basename(a.path)} (lines '
        f"{t.start_line + 1}-{t.end_line + 1}).",
        "",
        f"Target {t.id}; the reference is the user's code, copied verbatim with what it needs",
        f"from the file. Example inputs: {inputs.note}.",
        "",
        f"{ORIGIN_KEYS[0]}: {os.path.abspath(a.path)}",
        f"{ORIGIN_KEYS[1]}: {t.id}",
        f"{ORIGIN_KEYS[2]}: {t.source_hash}",
        f"{ORIGIN_KEYS[3]}: {inputs.source}",
    ]
    if paths:
        head.append(f"{ORIGIN_KEYS[4]}: {os.pathsep.join(sorted(paths))}")
    if inputs.small.sizes:
        head.append(f"{ORIGIN_KEYS[5]}: {inputs.small.describe()}")
    head.append('"""')
    pre = [
        _stmt_text(a, s)
        for s in a.body
        if isinstance(s, ast.ImportFrom) and s.module == "__future__"
    ]
    if paths:
        pre.append("import sys")
        pre += [f"sys.path.insert(0, {p!r})" for p in sorted(paths)]
    if "torch" not in bound:
        pre.append("import torch")
    ref_text = reference_text(a, ref)
    if ref.kind == "class":
        if ref.name != "Model":
            ref_text = re.sub(
                rf"^(\s*class\s+){re.escape(ref.name)}\b", r"\1Model", ref_text, count=1, flags=re.M
            )
            ref_text += f"\n\n\n{ref.name} = Model  # the user's name for it"
    else:
        sig, call = _call_args(ref.node, skip_self=False)
        ref_text += (
            f'\n\n\nclass Model(torch.nn.Module):\n    """Calls {ref.qualname}, the code under optimisation."""\n\n'
            f"    def forward(self, {sig}):\n        return {ref.qualname}({call})"
        ).replace("forward(self, )", "forward(self)")
    parts = ["\n".join(head), "\n".join(pre)] if pre else ["\n".join(head)]
    parts += [*_grouped(closure, body), ref_text]
    parts += [_stmt_text(a, s) for s in sorted(inputs.statements, key=lambda s: s.lineno)]
    if inputs.small.sizes:
        parts.append(inputs.small.constants())
    if inputs.code:
        parts.append(inputs.code.rstrip())
    flags = [f"{PRECISION_FLAGS[lv]} = True" for lv in accepted_precision(a, ref)]
    if flags:
        parts.append(
            "# accepted by `# kernelevo: precision = ...` above the target\n" + "\n".join(flags)
        )
    return "\n\n\n".join(p for p in parts if p.strip()) + "\n"


def _grouped(closure: list[ast.stmt], texts: list[str]) -> list[str]:
    """Runs of imports or of simple assignments stay together, as people write them."""
    out: list[str] = []
    prev: str | None = None
    for stmt, text in zip(closure, texts, strict=True):
        kind = (
            "import"
            if isinstance(stmt, (ast.Import, ast.ImportFrom))
            else "assign"
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.end_lineno - stmt.lineno < 3
            else None
        )
        if out and kind is not None and kind == prev:
            out[-1] += "\n" + text
        else:
            out.append(text)
        prev = kind
    return out


def check_task(task_path: str, timeout: float = 300.0, small: bool = False) -> TaskCheck:
    """Run the task once (Model(*get_init_inputs())(*get_inputs())) in a child process, time-limited;
    `small`: at its SMALL sizes even on a GPU."""
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "kernelevo.targets.task_check", task_path]
            + (["--small"] if small else []),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return TaskCheck(
            False, f"{task_path}: did not finish within {timeout:.0f} s", elapsed_s=timeout
        )
    elapsed = time.monotonic() - t0
    for line in reversed(proc.stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            return TaskCheck(data.get("ok"), data.get("message", ""), data, elapsed)
    tail = " | ".join((proc.stderr or "").strip().splitlines()[-3:])
    return TaskCheck(
        False,
        f"{task_path}: check process failed (exit {proc.returncode}): {tail}",
        elapsed_s=elapsed,
    )
