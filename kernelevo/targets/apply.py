"""Applying a verified kernel to the user's code, as a reviewable, all-or-nothing change.

The kernel goes into a new module next to the user's file; the target gets two lines at the
top of its forward (or function body) that call the kernel only for inputs like those it was
verified on, and otherwise fall through to the untouched original code. A regression test
comparing both paths is generated alongside. Planning is pure (text in, edits out); writing
re-checks every file and renames temporary files into place, undoing on any failure.

What it knows about the run (verified inputs, dtypes, devices, speedups, constructor arguments,
the hash the search started from) is an ApplyFacts record (apply_facts.py).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import replace

from kernelevo.targets import apply_templates as tpl
from kernelevo.targets.analysis import Analysis
from kernelevo.targets.apply_facts import ApplyFacts
from kernelevo.targets.apply_inputs import (
    guard_rules,
    regression_init_args,
    shapes_text,
    speedups_text,
    verified_input_sets,
    verified_params,
)
from kernelevo.targets.apply_rewrite import guarded_source
from kernelevo.targets.detect import analyze_source
from kernelevo.targets.edits import ApplyError, ApplyPlan, FileEdit, diff_of, write_plan
from kernelevo.targets.facts import ClassFacts
from kernelevo.targets.init_keywords import init_keywords
from kernelevo.targets.model import Target
from kernelevo.targets.own_package import OwnPackage, own_package
from kernelevo.targets.reference_call import NoReference, Reference, resolve_reference
from kernelevo.text_file import TextFileError, read_text

_NN_MODULE_ATTRS = frozenset(
    [
        "training",
        "parameters",
        "named_parameters",
        "buffers",
        "named_buffers",
        "children",
        "named_children",
        "modules",
        "named_modules",
        "state_dict",
        "register_buffer",
        "register_parameter",
        "to",
        "cuda",
        "cpu",
        "float",
        "half",
        "double",
        "bfloat16",
        "train",
        "eval",
        "apply",
        "forward",
        "zero_grad",
        "requires_grad_",
        "type",
        "extra_repr",
        "get_parameter",
        "get_buffer",
        "get_submodule",
    ]
)


def apply_candidate(
    user_file: str,
    target_id: str,
    candidate_path: str,
    facts: ApplyFacts,
    dry_run: bool = False,
) -> ApplyPlan:
    """Plan (and unless dry_run, write) the change that puts a run's verified candidate into user_file."""
    try:
        text = read_text(user_file, keep_newlines=True)
        candidate = read_text(candidate_path)
    except TextFileError as exc:
        raise ApplyError(str(exc)) from exc
    started = facts.source_hash
    if not started:
        raise ApplyError(
            f"run {facts.run_id or '?'}: no source_hash recorded for {target_id}; cannot tell "
            "whether the code changed since the search started"
        )
    current = analyze_source(text, user_file).detection().find(target_id)
    if current is None or current.id != target_id:
        raise ApplyError(
            f"{user_file}: {target_id} is no longer in the file (renamed or removed since the search)"
        )
    in_package = os.path.exists(
        os.path.join(os.path.dirname(os.path.abspath(user_file)), "__init__.py")
    )
    plan = plan_apply(
        text,
        replace(current, source_hash=started),
        candidate,
        facts,
        in_package=in_package,
        package=own_package(user_file, text),
    )
    if not dry_run:
        write_plan(plan)
    return plan


def plan_apply(
    user_file_text: str,
    target: Target,
    candidate_source: str,
    facts: ApplyFacts,
    in_package: bool = False,
    package: OwnPackage | None = None,
) -> ApplyPlan:
    """The edits that apply the candidate to `target`, whose source_hash is the one the search started from."""
    run_id = facts.run_id or "?"
    if not facts.verified:
        raise ApplyError(
            f"run {run_id}: the candidate was not verified (status {facts.status or 'unknown'}); "
            "only verified kernels are applied"
        )
    backend = facts.backend
    if backend not in ("triton", "cuda"):
        raise ApplyError(f"run {run_id}: unknown backend {backend!r} (expected triton or cuda)")
    a = analyze_source(user_file_text, target.path)
    if a.errors:
        raise ApplyError(f"{a.errors[0]}; fix the syntax error before applying")
    current = next((t for t in a.targets if t.id == target.id), None)
    if current is None:
        raise ApplyError(f"{target.path}: {target.id} is no longer in the file")
    if current.source_hash != target.source_hash:
        applied = tpl.applied_run_id(a.lines[current.start_line : current.end_line + 1])
        scripted_original = tpl.SCRIPTED_ORIGINAL.format(name=current.qualname)
        if applied is not None:
            raise ApplyError(
                f"{current.location()}: {current.qualname} already calls the kernel of run "
                f"{applied}"
                + (" (this run): nothing to do" if applied == run_id else "")
                + "; to apply another run, "
                + (
                    f"rename {scripted_original} back to {current.qualname} and delete the "
                    "function Apply wrote after it"
                    if f"def {scripted_original}(" in user_file_text
                    else "put back the code the search started from (the lines between the guard and "
                    f"its `# KernelEvo run {applied}` comment)"
                )
                + " and apply again"
            )
        raise ApplyError(
            f"{current.location()}: {current.qualname} changed since the search started (run {run_id}); "
            "the kernel was verified against the old code. Revert the change or search again"
        )
    try:
        ref = resolve_reference(a, current)
    except NoReference as exc:
        raise ApplyError(str(exc)) from exc
    if ref.kind == "class" and ref.call not in ref.node.body:
        raise ApplyError(
            f"{current.location()}: {ref.qualname}.forward is inherited; apply to the class that defines it"
        )
    cand = _model_new(candidate_source, run_id)
    attrs = _attributes_needed(a, ref, cand)

    folder = os.path.dirname(target.path)
    stem = os.path.splitext(os.path.basename(target.path))[0]
    slug = re.sub(r"\W+", "_", ref.qualname).lower()
    safe = re.sub(r"\W", "_", stem)
    safe = (
        "_" + safe if safe[:1].isdigit() else safe
    )  # `02-fused-softmax.py` is not an importable name
    module, alias = f"{safe}_kernelevo_{slug}", f"_kernelevo_{slug}"
    if alias in user_file_text:
        raise ApplyError(
            f"{current.location()}: a KernelEvo kernel is already applied here ({alias}); "
            f"remove it first to apply run {run_id}"
        )
    kernel_path = os.path.join(folder, module + ".py")
    test_path = os.path.join(folder, f"test_{module}.py")

    params = verified_params(ref)
    sets = verified_input_sets(facts, run_id)
    rules, tail, keywords = guard_rules(sets, ref, run_id)
    init = regression_init_args(facts, ref, run_id)
    new_user = guarded_source(a, ref, module, alias, run_id, in_package or package is not None)

    kernel_text = (
        tpl.KERNEL_HEADER.format(
            qualname=ref.qualname,
            user_file=os.path.basename(target.path),
            run_id=run_id,
            backend=backend,
            gpu=facts.gpu
            or (
                "the CPU (Triton's interpreter)" if facts.device_kinds == {"cpu"} else "unknown GPU"
            ),
            date=facts.date or "unknown date",
            speedups=speedups_text(facts),
            dtypes_text=", ".join(facts.dtypes),
            devices_text=", ".join(facts.devices),
            shapes_text=shapes_text(sets, params),
            test_file=os.path.basename(test_path),
        )
        + candidate_source.rstrip()
        + "\n"
        + tpl.KERNEL_ENTRY.format(
            user_file=os.path.basename(target.path),
            backend=backend,
            method=ref.kind == "class",
            dtypes=sorted(facts.dtypes),
            devices=sorted(facts.device_kinds),
            rules=rules,
            tail=tail,
            keywords=keywords,
            attrs=sorted(attrs),
            init=init,
            grad=facts.grad,
        )
    )
    if in_package:
        imports = f"from . import {stem} as _user\nfrom . import {module} as _kernel"
    else:
        imports = f"import {stem} as _user\nimport {module} as _kernel"
    user_import, kernel_import = imports.split("\n")
    if package is not None:  # its program imports it as `flux.modules.layers`: so does the test
        up = package.relative_root(folder)
        user_import = (
            "import sys\n\nsys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname("
            f"os.path.abspath(__file__)), {up!r})))\nfrom {package.dotted} import {stem} as _user"
        )
        kernel_import = f"from {package.dotted} import {module} as _kernel"
    if not stem.isidentifier():  # `02-fused-softmax.py`: load the user's file by its path
        user_import = tpl.LOAD_BY_PATH.format(file=os.path.basename(target.path))
    if backend == "cuda":
        kernel_import = (
            f"try:\n    {kernel_import}\nexcept Exception as exc:  # no CUDA toolchain here\n"
            f'    pytest.skip(f"kernel module unavailable: {{exc}}", allow_module_level=True)'
        )
    test_text = tpl.TEST.format(
        qualname=ref.qualname,
        run_id=run_id,
        user_file=os.path.basename(target.path),
        backend_import='pytest.importorskip("triton")\n' if backend == "triton" else "",
        import_user="\n".join(f"    {line}" if line else "" for line in user_import.splitlines()),
        import_kernel=kernel_import,
        init=init,
        init_keywords=tuple(init_keywords(facts.task_source)) if ref.kind == "class" else (),
        sets=sets,
        dtypes=sorted(facts.dtypes),
        devices=sorted(facts.device_kinds),
        alias=alias,
        method=ref.kind == "class",
    )
    for path, text in ((kernel_path, kernel_text), (test_path, test_text), (target.path, new_user)):
        try:
            compile(text, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise ApplyError(
                f"{path}:{exc.lineno}: generated code does not compile ({exc.msg}); nothing written"
            ) from exc
    files = [
        FileEdit(kernel_path, "", kernel_text),
        FileEdit(test_path, "", test_text),
        FileEdit(target.path, user_file_text, new_user),
    ]
    notes = [
        f"{ref.qualname} calls the kernel only for {', '.join(facts.dtypes)} on {', '.join(facts.devices)} "
        "with the verified shapes; everything else runs the original code"
    ]
    return ApplyPlan(files, diff_of(files), current.id, kernel_path, test_path, notes)


def _model_new(source: str, run_id: str) -> ast.ClassDef:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ApplyError(f"run {run_id}: candidate line {exc.lineno}: {exc.msg}") from exc
    for node in tree.body:
        if (
            isinstance(node, ast.ClassDef)
            and node.name == "ModelNew"
            and any(isinstance(s, ast.FunctionDef) and s.name == "forward" for s in node.body)
        ):
            return node
    raise ApplyError(f"run {run_id}: the candidate has no class ModelNew with forward()")


def _attributes_needed(a: Analysis, ref: Reference, cand: ast.ClassDef) -> set[str]:
    """Attributes of the user's module that ModelNew's methods read; refuse if the original lacks one."""
    if ref.kind != "class" or ref.cls is None:
        return set()
    own = {s.name for s in cand.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    own |= {
        t.id
        for s in cand.body
        if isinstance(s, ast.Assign)
        for t in s.targets
        if isinstance(t, ast.Name)
    }
    read: set[str] = set()
    for fn in cand.body:
        if isinstance(fn, ast.FunctionDef) and fn.name != "__init__" and fn.args.args:
            me = fn.args.args[0].arg
            read |= {
                n.attr
                for n in ast.walk(fn)
                if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == me
            }
    have = set(a.attributes(ref.cls))
    klass: ClassFacts | None = ref.cls
    seen = 0
    while klass is not None and seen < 20:
        have |= klass.class_attrs | set(klass.methods)
        klass = next((a.classes[b] for b in klass.bases if b in a.classes), None)
        seen += 1
    needed = read - own - _NN_MODULE_ATTRS
    missing = sorted(n for n in needed if n not in have and not n.startswith("__"))
    if missing:
        raise ApplyError(
            f"{a.path}:{ref.node.lineno}: the kernel reads self.{', self.'.join(missing)}, which "
            f"{ref.qualname} does not have; it cannot run on the existing module"
        )
    return needed & have


__all__ = [
    "ApplyError",
    "ApplyPlan",
    "FileEdit",
    "apply_candidate",
    "plan_apply",
    "write_plan",
]
