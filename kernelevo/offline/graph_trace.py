"""Child process for pattern matching: trace a task's reference, or check generated candidates.

`python -m kernelevo.offline.graph_trace trace TASK SIZE OUT.json` writes the reference's
ATen graph (make_fx on fake tensors, so nothing big runs) as plain JSON for match.py.
`python -m kernelevo.offline.graph_trace check TASK SIZE CANDIDATES.json OUT.json` imports
each candidate file and compares it with the reference on the task's inputs (run with
TRITON_INTERPRET=1 on a machine without a GPU).
"""

from __future__ import annotations

import json
import math
import sys
import traceback
from pathlib import Path
from typing import Any

from kernelevo.targets.gpu_only import gpu_only_here


def _encode(value: Any) -> Any:
    import torch
    import torch.fx

    if isinstance(value, torch.fx.Node):
        return {"n": value.name}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, torch.dtype):
        return {"dtype": str(value)}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, (torch.layout, torch.memory_format)):
        return {"other": str(value)}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return {"other": repr(value)}


def _target_name(target: Any) -> str:
    name = str(target)
    if name.startswith("aten."):
        return name
    return getattr(target, "__name__", name)


class NoTemplateInputs(Exception):
    """Inputs no template is written for: said as the templates' reason, not a failure."""


class TaskFault(Exception):
    """The task failed on its own (its import, get_init_inputs(), Model() or get_inputs())."""


def trace(task_path: str, size: str) -> dict[str, Any]:
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    from kernelevo.task import load_task_module, task_step

    def own(what: str, step: Any) -> Any:
        """One of the task's own steps: its failure is the task's, not the tracer's."""
        return task_step(task_path, what, step, TaskFault)

    module = own("importing the task", lambda: load_task_module(task_path, size=size))
    torch.manual_seed(0)
    init_inputs = own("get_init_inputs()", lambda: list(module.get_init_inputs()))
    model = own("Model(*get_init_inputs())", lambda: module.Model(*init_inputs).eval())
    inputs = own("get_inputs()", lambda: list(module.get_inputs()))
    for i, x in enumerate(inputs):
        if isinstance(x, (list, tuple, dict)):
            raise NoTemplateInputs(
                f"input {i + 1} is a {type(x).__name__} (templates take tensors and plain values)"
            )
    from kernelevo.offline.skeleton import state_entries

    entries = state_entries(model)
    state = [(n, t, "param" if is_param else "buffer") for n, t, is_param in entries]
    names = [n for n, _, _ in state]
    k = len(state)

    def flat_forward(*flat: Any) -> Any:
        return torch.func.functional_call(
            model, dict(zip(names, flat[:k], strict=True)), tuple(flat[k:])
        )

    with torch.no_grad():
        gm = make_fx(flat_forward, tracing_mode="fake")(*[t for _, t, _ in state], *inputs)
    placeholders: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []
    output: Any = None
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        shape = list(val.shape) if isinstance(val, torch.Tensor) else None
        dtype = str(val.dtype) if isinstance(val, torch.Tensor) else None
        if node.op == "placeholder":
            i = len(placeholders)
            entry = {"name": node.name, "shape": shape, "dtype": dtype}
            if i < k:
                entry.update(kind=state[i][2], pname=state[i][0])
            else:
                entry.update(
                    kind="input",
                    index=i - k,
                    value=None
                    if isinstance(inputs[i - k], torch.Tensor)
                    else _encode(inputs[i - k]),
                )
            placeholders.append(entry)
        elif node.op == "call_function":
            nodes.append(
                {
                    "name": node.name,
                    "target": _target_name(node.target),
                    "args": _encode(node.args),
                    "kwargs": {a: _encode(b) for a, b in node.kwargs.items()},
                    "shape": shape,
                    "dtype": dtype,
                    "users": len(node.users),
                }
            )
        elif node.op == "output":
            output = _encode(node.args[0])
        else:
            raise RuntimeError(f"graph node {node.op} {node.target} is not supported")
    from kernelevo.offline.skeleton import signature_text, state_records

    return {
        "placeholders": placeholders,
        "nodes": nodes,
        "output": output,
        "state": state_records(model, entries),
        "init_params": signature_text(type(model).__init__),
        "init_ints": init_ints(type(model).__init__, init_inputs),
        "forward_params": signature_text(type(model).forward),
        "tolerance": getattr(module, "TOLERANCE", None),
        "library_ops": list(getattr(module, "ALLOWED_LIBRARY_OPS", []) or []),
        "strict": bool(getattr(module, "STRICT", False)),
    }


def init_ints(init: Any, values: list[Any]) -> dict[str, int]:
    """Model's integer constructor arguments by name: a parameter's shape is written in their terms,
    so a candidate traced at the SMALL size still fits Model built at any other."""
    import inspect

    sig = inspect.signature(init)
    try:
        bound = sig.bind(None, *values)
    except TypeError:
        return {}
    bound.apply_defaults()
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {
        k: v
        for k, v in list(bound.arguments.items())[1:]
        if type(v) is int and sig.parameters[k].kind in named
    }


DEFAULT_TOL = {
    "torch.float64": (1e-7, 1e-7),
    "torch.float32": (1e-4, 1e-4),
    "torch.float16": (1e-2, 1e-2),
    "torch.bfloat16": (2e-2, 2e-2),
}


def _tolerance(module: Any, dtype: Any) -> tuple[float, float]:
    tol = getattr(module, "TOLERANCE", None) or {}
    if str(dtype).replace("torch.", "") in tol:
        tol = tol[str(dtype).replace("torch.", "")]
    if "atol" in tol:
        return float(tol["atol"]), float(tol.get("rtol", tol["atol"]))
    return DEFAULT_TOL.get(str(dtype), (0.0, 0.0))


def check(
    task_path: str, size: str, candidates: dict[str, str], device: str = "cpu"
) -> dict[str, str | None]:
    """name -> None when the candidate matches the reference on every input set, else why not."""
    import torch

    from kernelevo.task import import_file, load_task_module

    module = load_task_module(task_path, size=size)
    results: dict[str, str | None] = {}
    for name, path in candidates.items():
        try:
            cand = import_file(path, "template")
            torch.manual_seed(0)
            ref = module.Model(*module.get_init_inputs()).eval().to(device)
            new = cand.ModelNew(*module.get_init_inputs()).to(device)
            new.load_state_dict(ref.state_dict())
            sets = [module.get_inputs()] + [
                list(s) for s in getattr(module, "get_extra_inputs", lambda: [])()
            ]
            problem = None
            for inputs in sets:
                inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
                with torch.no_grad():
                    expected = ref(
                        *[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
                    )
                    got = new(*inputs)
                exp_list = list(expected) if isinstance(expected, (tuple, list)) else [expected]
                got_list = list(got) if isinstance(got, (tuple, list)) else [got]
                for e, g in zip(exp_list, got_list, strict=False):
                    atol, rtol = _tolerance(module, e.dtype)
                    if g.shape != e.shape or g.dtype != e.dtype:
                        problem = f"output {tuple(g.shape)} {g.dtype}, expected {tuple(e.shape)} {e.dtype}"
                    elif not torch.allclose(
                        g.float(), e.float(), atol=atol, rtol=rtol, equal_nan=True
                    ):
                        err = (g.float() - e.float()).abs().nan_to_num(math.inf).max().item()
                        problem = (
                            f"max abs error {err:.3g} on input shapes "
                            f"{[tuple(x.shape) for x in inputs if isinstance(x, torch.Tensor)]}"
                        )
                    if problem:
                        break
                if problem:
                    break
            results[name] = problem
        except Exception as exc:
            results[name] = f"{type(exc).__name__}: {str(exc)[:300]}"
    return results


def main(argv: list[str]) -> int:
    mode = argv[0]
    try:
        if mode == "trace":
            data: dict[str, Any] = {"ok": True, **trace(argv[1], argv[2])}
            out = argv[3]
        else:
            data = {
                "ok": True,
                "results": check(argv[1], argv[2], json.loads(Path(argv[3]).read_text())),
            }
            out = argv[4]
    except TaskFault as exc:
        data = {"ok": False, "task_fault": str(exc), "reason": str(exc)}
        out = argv[-1]
    except NoTemplateInputs as exc:
        data = {"ok": False, "no_template": str(exc), "reason": str(exc)}
        out = argv[-1]
    except Exception as exc:
        data = {
            "ok": False,
            "gpu_only": gpu_only_here(exc),
            "reason": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc()[-3000:],
        }
        out = argv[-1]
    Path(out).write_text(json.dumps(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
