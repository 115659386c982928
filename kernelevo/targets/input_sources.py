"""Example inputs found without the user writing any, tried in this order:

1. the workspace's own tests and scripts that call the target, run under capture (CPU, time-limited);
2. the file's own `if __name__ == "__main__":` block, run the same way;
3. the signature: type hints, defaults, config classes and names at small sizes, tried in a
   child process until a call runs (`probe_child`).

Each source that produces nothing says why, so a failure lists every reason at once.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import json
import os
import re
import tempfile
from typing import Any

from kernelevo.targets.analysis import Analysis
from kernelevo.targets.captured_inputs import capture_from_script, inputs_from_capture
from kernelevo.targets.example_inputs import ExampleInputs, ModuleMissing, NoExampleInputs
from kernelevo.targets.reference_call import Reference
from kernelevo.targets.task_origin import ORIGIN_KEYS, task_origin
from kernelevo.targets.user_run import run_user_code
from kernelevo.text_file import file_problem

_SKIP_DIRS = {
    ".git",
    ".kernelevo",
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    "site-packages",
    "build",
    "dist",
}
_MAX_FILES = 400
_MAX_SCRIPTS = 4


def workspace_root(path: str) -> str:
    """The nearest folder above `path` that looks like a project (git, pyproject, setup.py)."""
    folder = os.path.dirname(os.path.abspath(path))
    probe = folder
    for _ in range(6):
        if any(
            os.path.exists(os.path.join(probe, m))
            for m in (".git", "pyproject.toml", "setup.py", "setup.cfg")
        ):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return folder


def workspace_scripts(user_file: str, name: str) -> list[tuple[str, bool]]:
    """(path, is_pytest_file) of workspace files that mention the target and import its module."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    dotted = re.escape(module_name(user_file))
    stem = re.escape(os.path.splitext(os.path.basename(user_file))[0])
    imports = re.compile(rf"^\s*(from\s+({dotted}|\.+{stem})\s+import\b|import\s+{dotted}\b)", re.M)
    own = os.path.realpath(user_file)
    found: list[tuple[int, str, bool]] = []
    seen = 0
    for folder, dirs, files in os.walk(workspace_root(user_file)):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            seen += 1
            if seen > _MAX_FILES:
                break
            path = os.path.join(folder, f)
            if os.path.realpath(path) == own or file_problem(path):  # a FIFO would block the read
                continue
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read(200_000)
            except OSError:
                continue
            if not word.search(text) or not imports.search(text):
                continue
            is_test = f.startswith("test_") or f.endswith("_test.py")
            runs = is_test or "__main__" in text
            if runs:
                found.append((0 if is_test else 1, path, is_test and "__main__" not in text))
    return [(p, t) for _, p, t in sorted(found)[:_MAX_SCRIPTS]]


def module_name(user_file: str) -> str:
    """`pkg.sub.model` for a file inside packages, `model` for a file on its own."""
    folder, stem = os.path.split(os.path.abspath(user_file))
    parts = [os.path.splitext(stem)[0]]
    while os.path.exists(os.path.join(folder, "__init__.py")):
        folder, pkg = os.path.split(folder)
        parts.insert(0, pkg)
    return ".".join(parts)


def has_main_block(a: Analysis) -> bool:
    return any(
        isinstance(s, ast.If)
        and isinstance(s.test, ast.Compare)
        and isinstance(s.test.left, ast.Name)
        and s.test.left.id == "__name__"
        for s in a.body
    )


def from_workspace(
    a: Analysis, ref: Reference, timeout: float, reasons: list[str]
) -> ExampleInputs | None:
    """Sources 1 and 2: a real call's arguments, captured from code the user already has."""
    runs = [
        (p, t, os.path.relpath(p, workspace_root(a.path)))
        for p, t in workspace_scripts(a.path, ref.name)
    ]
    if not runs:
        reasons.append(
            f"no test or script in {workspace_root(a.path)} imports {os.path.basename(a.path)} and "
            f"calls {ref.name}"
        )
    if has_main_block(a):
        runs.append((a.path, False, f"the __main__ block of {os.path.basename(a.path)}"))
    else:
        reasons.append(f"{os.path.basename(a.path)} has no __main__ block")
    for path, is_pytest, label in runs:
        try:
            captured = capture_from_script(
                path, a.path, ref, timeout, cpu_only=True, pytest=is_pytest
            )
        except NoExampleInputs as exc:
            reasons.append(f"{label} (run on the CPU): {str(exc).split(': ', 1)[-1][:240]}")
            continue
        try:
            return inputs_from_capture(
                captured,
                path,
                "workspace",
                f"captured from {label} (CPU run)",
                f"captured from {label}",
            )
        except NoExampleInputs as exc:
            reasons.append(f"{label}: {exc}")
    return None


def readable_roots(user_file: str) -> list[str]:
    """What the user's code may read while it runs for us: its workspace and its package's root."""
    roots = [workspace_root(user_file), os.path.dirname(os.path.abspath(user_file))]
    folder = os.path.dirname(os.path.abspath(user_file))
    while os.path.exists(os.path.join(folder, "__init__.py")):
        folder = os.path.dirname(folder)
    roots.append(folder)
    return list(dict.fromkeys(roots))


def from_signature(
    draft: str, user_file: str, task_path: str, ref: Reference, timeout: float, reasons: list[str]
) -> ExampleInputs | None:
    """Source 3: guesses from the signature, kept only if the target really runs on them."""
    call = f"{ref.qualname}.{ref.call.name}" if ref.kind == "class" else ref.qualname
    with tempfile.TemporaryDirectory(prefix="kernelevo-probe-") as tmp:
        probe_path = os.path.join(tmp, "draft_task.py")
        with open(probe_path, "w", encoding="utf-8") as fh:
            fh.write(draft)
        init_path = os.path.join(tmp, "init.pt")
        spec = {
            "task": probe_path,
            "kind": ref.kind,
            "function": ref.qualname,
            "call": call,
            "init_data": init_path,
            "budget_s": max(5.0, timeout * 0.8),
        }
        spec_path = os.path.join(tmp, "spec.json")
        with open(spec_path, "w") as fh:
            json.dump(spec, fh)
        # the roots the draft puts on sys.path (a package above folders without an __init__.py)
        imported = task_origin(probe_path).get(ORIGIN_KEYS[4], "")
        roots = readable_roots(user_file) + [p for p in imported.split(os.pathsep) if p]
        run = run_user_code("kernelevo.targets.probe_child", [spec_path], roots, tmp, timeout)
        if run.timed_out:
            reasons.append(f"guessing from the signature: no call finished within {timeout:.0f} s")
            return None
        init_blob = ""
        if os.path.exists(init_path):
            with open(init_path, "rb") as fh:
                init_blob = base64.b64encode(fh.read()).decode()
    result = None
    for line in reversed(run.stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                result = json.loads(line)
                break
            except ValueError:
                continue
    if result is None:
        tail = " | ".join((run.stderr or "").strip().splitlines()[-2:])
        reasons.append(
            f"guessing from the signature: the probe process failed (exit {run.returncode}): {tail}"
        )
        return None
    if result.get("missing"):
        raise ModuleMissing(_missing_module(result, user_file, call))
    if not result.get("ok"):
        reasons.append(f"guessing from the signature: {result.get('message', 'no input fitted')}")
        return None
    result["init_blob"] = init_blob
    try:
        return inputs_from_capture(
            result,
            task_path,
            "signature",
            f"guessed from the signature of {call} ("
            + ("shapes from its docstring, " if result.get("shapes_from") == "docstring" else "")
            + f"small sizes; {result['tried']} tried"
            + (
                f"; checked on the CPU only up to the GPU code it reached, {result['gpu_only']})"
                if result.get("gpu_only")
                else ")"
            ),
            "guessed from the signature",
        )
    except NoExampleInputs as exc:
        reasons.append(f"guessing from the signature: {exc}")
        return None


def _missing_module(result: dict[str, Any], user_file: str, call: str) -> str:
    """The one line for a target whose file imports a package that is not installed here, at the
    file's first import of it (the probe ran a draft task with the code copied in)."""
    missing = str(result["missing"])
    line = None
    with contextlib.suppress(OSError, SyntaxError, ValueError):
        with open(user_file, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        line = min(
            (
                node.lineno
                for node in ast.walk(tree)
                if (
                    isinstance(node, ast.Import)
                    and any(n.name.split(".")[0] == missing for n in node.names)
                )
                or (
                    isinstance(node, ast.ImportFrom)
                    and not node.level
                    and (node.module or "").split(".")[0] == missing
                )
            ),
            default=None,
        )
    where = f"{user_file}:{line}" if line else user_file
    return (
        f"{where}: {call} cannot run here: its file imports {missing}, which is not installed in "
        f"this environment; install it, or put its checkout on PYTHONPATH ({result.get('error', '')})"
    )
