"""What an applied kernel is known to handle, read from the run's metadata: the verified input
sets become the guard's rules (rank, fixed sizes, literal values, defaults), the constructor
arguments come from the run or the task's get_init_inputs(), and the shapes and speedups are
stated in the generated module's header.

Apart from the rewrite (apply.py) because it is the part that decides when the kernel runs
instead of the user's code: a rule too loose runs it on inputs it was never verified on.
"""

from __future__ import annotations

import ast
import contextlib

from kernelevo.targets.apply_facts import ApplyFacts
from kernelevo.targets.edits import ApplyError
from kernelevo.targets.inputs import required_params
from kernelevo.targets.reference_call import Reference


def verified_params(ref: Reference) -> list[ast.arg]:
    args = list(ref.call.args.posonlyargs) + list(ref.call.args.args)
    return args[1:] if ref.kind == "class" else args


def verified_input_sets(facts: ApplyFacts, run_id: str) -> list[list[dict | None]]:
    if facts.inputs:
        sets = facts.inputs
    elif facts.shapes:
        sets = [
            [None if s is None else {"kind": "tensor", "shape": list(s)} for s in one]
            for one in facts.shapes
        ]
    else:
        raise ApplyError(
            f"run {run_id}: no verified shapes recorded; cannot tell which inputs the kernel handles"
        )
    if not facts.dtypes or not facts.devices:
        raise ApplyError(f"run {run_id}: no verified dtypes/devices recorded")
    if not all(isinstance(one, list) for one in sets):
        raise ApplyError(
            f"run {run_id}: shapes must be one list of argument shapes per verified input set"
        )
    return sets


def guard_rules(sets: list[list], ref: Reference, run_id: str) -> tuple[list, list, dict]:
    n = min(len(s) for s in sets)
    rules: list = []
    for i in range(n):
        specs = [s[i] for s in sets]
        if any(sp is None for sp in specs):
            rules.append(None)
        elif all(sp.get("kind") == "tensor" for sp in specs):
            ranks = {len(sp["shape"]) for sp in specs}
            if len(ranks) > 1:
                raise ApplyError(
                    f"run {run_id}: argument {i} was verified with different ranks; cannot guard it"
                )
            fixed = {
                d: size
                for d, size in enumerate(specs[0]["shape"])
                if all(sp["shape"][d] == size for sp in specs)
            }
            rules.append(("tensor", ranks.pop(), fixed))
        elif (
            all(sp.get("kind") == "value" for sp in specs)
            and len({sp["repr"] for sp in specs}) == 1
        ):
            rules.append(("value", ast.literal_eval(specs[0]["repr"])))
        else:
            rules.append(None)
    params = verified_params(ref)
    defaults = ref.call.args.defaults
    first_default = len(params) - len(defaults)
    tail: list = []
    for i in range(n, len(params)):
        if i < first_default:
            raise ApplyError(
                f"run {run_id}: verified with {n} arguments but {ref.qualname} requires {params[i].arg}"
            )
        tail.append(_literal(defaults[i - first_default]))
    keywords = {
        k.arg: (_literal(d) if d is not None else "*")
        for k, d in zip(ref.call.args.kwonlyargs, ref.call.args.kw_defaults, strict=True)
    }
    return rules, tail, keywords


def _literal(node: ast.expr):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return "*"


def regression_init_args(facts: ApplyFacts, ref: Reference, run_id: str) -> list:
    if ref.kind != "class":
        return list(facts.init_args or [])
    if facts.init_args is not None:
        return list(facts.init_args)
    if facts.task_source:
        found = static_init_args(facts.task_source, small=facts.size == "small")
        if found is not None:
            return found
    if ref.init is None or not required_params(ref.init, True):
        return []
    raise ApplyError(
        f"run {run_id}: constructor arguments for {ref.qualname} unknown (no init_args or task_source "
        "in the run's metadata); the regression test needs them"
    )


def static_init_args(task_source: str, small: bool = False) -> list | None:
    """get_init_inputs() of a task, when it returns literals and module-level constants; `small`:
    with the task's SMALL overrides, as the verification that ran at that size built them."""
    tree = ast.parse(task_source)
    consts: dict[str, object] = {}
    overrides = {}
    for stmt in tree.body:
        if small and isinstance(stmt, ast.Assign) and getattr(stmt.targets[0], "id", "") == "SMALL":
            try:
                overrides = dict(ast.literal_eval(stmt.value))
            except (ValueError, TypeError):
                return None
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            with contextlib.suppress(ValueError):
                consts[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            consts.update(overrides)
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "get_init_inputs":
            ret = next((s.value for s in stmt.body if isinstance(s, ast.Return)), None)
            if (
                isinstance(ret, ast.Call)
                and getattr(ret.func, "id", "") == "_kernelevo_list"
                and len(ret.args) == 1
            ):  # the comment and decorator routes: _kernelevo_list((...))
                ret = ret.args[0]
            if isinstance(ret, (ast.List, ast.Tuple)):
                out = []
                for e in ret.elts:
                    if isinstance(e, ast.Name) and e.id in consts:
                        out.append(consts[e.id])
                    else:
                        try:
                            out.append(ast.literal_eval(e))
                        except ValueError:
                            return None
                return out
    return None


def speedups_text(facts: ApplyFacts) -> str:
    eager, comp = facts.speedup_eager, facts.speedup_compile
    parts = [f"{eager:.2f}x vs eager PyTorch" if isinstance(eager, (int, float)) else "eager: n/a"]
    parts.append(
        f"{comp:.2f}x vs torch.compile" if isinstance(comp, (int, float)) else "torch.compile: n/a"
    )
    return ", ".join(parts)


def shapes_text(sets: list[list], params: list[ast.arg]) -> str:
    names = [p.arg for p in params]
    out = []
    for one in sets:
        items = []
        for i, sp in enumerate(one):
            name = names[i] if i < len(names) else f"arg{i}"
            items.append(
                f"{name}: {list(sp['shape']) if sp and sp.get('kind') == 'tensor' else (sp or {}).get('repr', '?')}"
            )
        out.append(", ".join(items))
    return " | ".join(out)
