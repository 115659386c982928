"""Building a self-contained KernelBench-format task from a target in a user's file.

The reference is the user's own code, copied verbatim with exactly what it needs from the
file (imports, constants, helpers), so the search optimises what the user runs, and the task
keeps working when the user's file changes. Nothing here imports torch; the check that the
task runs happens in a child process (`task_check`).
"""

from __future__ import annotations

import ast
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from kernelevo.atomic_write import write_atomic
from kernelevo.targets.analysis import Analysis
from kernelevo.targets.closure import (
    bindings,
    call_args,
    example_decorators,
    free_names,
    needed_statements,
    reference_text,
    stmt_text,
    uses,
)
from kernelevo.targets.detect import analyze_file
from kernelevo.targets.example_inputs import ExampleInputs, NoExampleInputs
from kernelevo.targets.init_keywords import init_by_name
from kernelevo.targets.input_sources import from_signature, from_workspace
from kernelevo.targets.inputs import PRECISION_FLAGS, accepted_precision, find_inputs, suggestion
from kernelevo.targets.model import Target
from kernelevo.targets.own_package import package_parent
from kernelevo.targets.reference_call import NoReference, Reference, forward_call, resolve_reference
from kernelevo.targets.task_origin import ORIGIN_KEYS, keep_edited, stamped, task_path_for
from kernelevo.text_file import file_problem

RESERVED = ("Model", "get_inputs", "get_init_inputs", "_kernelevo_list")


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
    problem = file_problem(user_file)
    if problem:
        raise ExtractError(problem)
    if user_file.endswith((".cu", ".cuh")):
        user_file, key = _launcher_file_for(user_file, key)
    a = analyze_file(user_file)
    t = find_target(a, key)
    out = out_dir or os.path.join(os.getcwd(), ".kernelevo", "tasks")
    if write:
        _task_folder(out)
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
        built.path = path
        keep_edited(path)
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


def _task_folder(out: str) -> None:
    """The folder tasks are written to, made up front so that an unwritable one is the user's
    one-line error before any input is captured or guessed."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise ExtractError(f"{out}: is a file; --out names the folder the task goes into")
    if not os.path.exists(out) and out.endswith(".py"):  # a folder named like a file: a slip
        raise ExtractError(
            f"{out}: --out names the folder the task goes into (its file is named after the "
            f"target); give --out {os.path.dirname(out) or '.'}"
        )
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".kernelevo-"):
            pass
    except OSError as exc:
        raise ExtractError(
            f"{out}: cannot write the task there ({exc.strerror or exc}); "
            "give --out a folder you can write"
        ) from exc


def _write(path: str, text: str) -> None:
    try:
        write_atomic(path, stamped(text))
    except OSError as exc:
        raise ExtractError(f"{path}: cannot write the task ({exc.strerror or exc})") from exc


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


def _launcher_file_for(cu_file: str, key: str) -> tuple[str, str]:
    """A .cu kernel's reference lives in the Python file next to it that compiles it; entries that
    are not readable regular files (a folder named x.py, a FIFO, a dangling link) are skipped."""
    base = os.path.basename(cu_file)
    folder = os.path.dirname(os.path.abspath(cu_file))
    for name in sorted(os.listdir(folder)):
        path = os.path.join(os.path.dirname(cu_file), name)
        if name.endswith(".py") and file_problem(path) is None:
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    if base not in fh.read():
                        continue
            except OSError:
                continue
            for t in analyze_file(path).targets:
                if t.kind == "cuda_file" and os.path.basename(t.qualname) == base:
                    return path, t.id
    raise ExtractError(
        f"{cu_file}:1: no Python file next to it compiles {base}; add a launcher that loads it "
        f"(e.g. torch.utils.cpp_extension.load(sources=[...]))"
    )


def _localize(a: Analysis, stmt: ast.stmt, paths: set[str]) -> str:
    """Imports of the user's own modules: relative ones made absolute, their root put on sys.path."""
    if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return stmt_text(a, stmt)
    folder = os.path.dirname(os.path.abspath(a.path))
    if isinstance(stmt, ast.ImportFrom) and stmt.level:
        pkg: list[str] = []
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
        else [(stmt.module or "").split(".")[0]]
    )
    for top in tops:
        if os.path.exists(os.path.join(folder, top + ".py")) or os.path.isdir(
            os.path.join(folder, top)
        ):
            paths.add(folder)
        parent = package_parent(folder, top)
        if parent is not None:
            paths.add(parent)
    return stmt_text(a, stmt)


def task_source(a: Analysis, t: Target, ref: Reference, inputs: ExampleInputs) -> str:
    skip = {id(d) for d in example_decorators(a, ref.node)}
    own = free_names(reference_text(a, ref)) if ref.node.col_offset == 0 or not skip else None
    wanted = (own if own is not None else uses(ref.node, skip)) | inputs.uses
    for stmt in inputs.statements:
        wanted |= uses(stmt)
    top = next(
        (s for s in a.body if s.lineno <= ref.node.lineno <= (s.end_lineno or s.lineno)), None
    )
    exclude = {id(ref.node), id(top)} | {id(s) for s in inputs.statements}
    if ref.kind == "class" and top is not ref.node:
        exclude.discard(id(top))  # a nested class may use its outer class's other members
    closure = [s for s in needed_statements(a, wanted, exclude) if s is not ref.node]
    clash = (
        set(RESERVED) & set().union(*(bindings(s) for s in closure), {ref.name} - {"Model"})
        if closure
        else set()
    )
    if clash - {"Model"} or ("Model" in clash and ref.name != "Model"):
        raise ExtractError(
            f"{t.location()}: the file defines {', '.join(sorted(clash))}, names a task reserves"
        )
    paths: set[str] = set()
    body = [_localize(a, s, paths) for s in closure]
    bound = set().union(*(bindings(s) for s in closure)) if closure else set()
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
        stmt_text(a, s)
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
        ref_text += forward_call(ref.node, inputs.names, inputs.keywords)
        ref_text += init_by_name(inputs.init_keywords)
    else:
        sig, call = call_args(ref.call, skip_self=False, fixed=inputs.keywords)  # the function
        ref_text += (
            f'\n\n\nclass Model(torch.nn.Module):\n    """Calls {ref.qualname}, the code under optimisation."""\n\n'
            f"    def forward(self, {sig}):\n        return {ref.qualname}({call})"
        ).replace("forward(self, )", "forward(self)")
    parts = ["\n".join(head), "\n".join(pre)] if pre else ["\n".join(head)]
    parts += [*_grouped(closure, body), ref_text]
    parts += [stmt_text(a, s) for s in sorted(inputs.statements, key=lambda s: s.lineno)]
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
            if isinstance(stmt, (ast.Assign, ast.AnnAssign))
            and (stmt.end_lineno or stmt.lineno) - stmt.lineno < 3
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
