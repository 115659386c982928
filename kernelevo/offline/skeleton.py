"""What every generated candidate shares with its task: constructor and forward signatures
and the parameter names a state_dict copy needs. No torch here."""

from __future__ import annotations

import ast
import inspect
from typing import Any

STATE_HELPER = '''

def _state(module, name, shape, dtype, parameter, values=None):
    """Registers a parameter or buffer under Model's (dotted) name, so load_state_dict fits; a
    buffer Model keeps out of its state_dict (persistent=False) comes with its values."""
    *path, leaf = name.split(".")
    for part in path:
        if part not in module._modules:
            module.add_module(part, nn.Module())
        module = module._modules[part]
    if values is None:
        value = torch.zeros(shape, dtype=dtype)
    else:
        value = torch.tensor(values, dtype=dtype).reshape(shape)
    if parameter:
        module.register_parameter(leaf, nn.Parameter(value))
    else:
        module.register_buffer(leaf, value, persistent=values is None)
'''


class SignatureError(Exception):
    pass


def signature_text(fn: Any) -> list[str]:
    """Parameter list of a method as source text, without self and annotations."""
    out: list[str] = []
    for i, p in enumerate(inspect.signature(fn).parameters.values()):
        if i == 0 and p.name == "self":
            continue
        prefix = "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else ""
        text = prefix + p.name
        if p.default is not p.empty:
            try:
                ast.literal_eval(repr(p.default))
                text += f"={p.default!r}"
            except (ValueError, SyntaxError):
                text += "=None"
        if p.kind == p.KEYWORD_ONLY and not any(o.startswith("*") for o in out):
            out.append("*")
        out.append(text)
    return out


def forward_names(forward_params: list[str], count: int) -> list[str]:
    """Expressions naming the first `count` forward arguments (get_inputs() order)."""
    names: list[str] = []
    star = None
    for p in forward_params:
        if p.startswith("**") or p == "*":
            continue
        if p.startswith("*"):
            star = p[1:]
            continue
        names.append(p.split("=")[0])
    if len(names) < count:
        if star is None:
            raise SignatureError(
                f"get_inputs() returns {count} values but forward takes {len(names)}"
            )
        names += [f"{star}[{i}]" for i in range(count - len(names))]
    return names[:count]


def shape_text(shape: list[int], init_ints: dict[str, int] | None) -> str:
    """A state shape as source: each size that equals exactly one integer constructor argument is
    written as that argument's name (nn.Linear(in_features, out_features) -> (out_features,
    in_features)), other sizes as numbers."""
    dims = []
    for d in shape:
        names = [k for k, v in (init_ints or {}).items() if v == d]
        dims.append(names[0] if len(names) == 1 else str(d))
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def model_class(
    init_params: list[str],
    forward_params: list[str],
    state: list[dict[str, Any]],
    forward_body: list[str],
    init_ints: dict[str, int] | None = None,
) -> str:
    """`class ModelNew` with Model's signatures; forward_body lines are indented here."""
    init = ["        super().__init__()"]
    for s in state:
        shape = shape_text(s["shape"], init_ints)
        values = f", values={s['values']!r}" if "values" in s else ""
        init.append(
            f"        _state(self, {s['name']!r}, {shape}, {s['dtype']}, {s['parameter']}{values})"
        )
    return (
        "\n\nclass ModelNew(nn.Module):\n"
        f"    def __init__({', '.join(['self', *init_params])}):\n" + "\n".join(init) + "\n\n"
        f"    def forward({', '.join(['self', *forward_params])}):\n"
        + "\n".join("        " + line for line in forward_body)
        + "\n"
    )


MAX_WRITTEN = 4096  # values of a non-persistent buffer written into a candidate, at most


def state_entries(model: Any) -> list[tuple[str, Any, bool]]:
    """(name, tensor, is_parameter) for every parameter and buffer, in a stable order. A buffer
    the state_dict leaves out (persistent=False, such as a rotary embedding's inv_freq) cannot
    reach a candidate by load_state_dict: its values are written into the candidate instead,
    which a large one cannot be."""
    persistent = set(model.state_dict().keys())
    entries = [(n, t.detach(), True) for n, t in model.named_parameters()]
    for n, t in model.named_buffers():
        if n not in persistent and t.numel() > MAX_WRITTEN:
            raise SignatureError(
                f"buffer {n} is not in Model's state_dict (persistent=False) and holds "
                f"{t.numel()} values, too many to write into a candidate"
            )
        entries.append((n, t, False))
    return entries


def state_records(model: Any, entries: list[tuple[str, Any, bool]]) -> list[dict[str, Any]]:
    """What a generated candidate registers for each entry; a non-persistent buffer's values too."""
    persistent = set(model.state_dict().keys())
    records = []
    for n, t, is_param in entries:
        record = {"name": n, "shape": list(t.shape), "dtype": str(t.dtype), "parameter": is_param}
        if not is_param and n not in persistent:
            record["values"] = t.detach().cpu().reshape(-1).tolist()
        records.append(record)
    return records
