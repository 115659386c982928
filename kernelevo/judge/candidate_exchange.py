"""What crosses between the judge and the candidate process: inputs shared as copies (the
reference reads only the judge's own), buffers the judge exports for CUDA outputs (bounded by
what the task can produce), each output read back from its descriptor as data, and the checks
that come before any comparison (inputs unchanged, no output aliasing an input).

Nothing here trusts the candidate's description: a descriptor that is not a plain tensor, a
buffer not copied, or more bytes than the task's outputs need is a failure, never a pass.
"""

from __future__ import annotations

from typing import Any

import torch

from kernelevo import cuda_ipc
from kernelevo.tensor_channel import (
    DTYPES,
    described_tensors,
    export_values,
    map_tensors,
    open_tensor,
    placed,
    tensors_in,
)
from kernelevo.verdict import Check


def share_inputs(
    values: list[Any], folder: str, prefix: str, via: str, device: torch.device
) -> tuple[list[Any], list[Any]]:
    """Descriptors for the candidate, and the judge's handle on that memory: a copy of `values`,
    every tensor in it as one flat list (inside tuples and lists too: a layer's (cos, sin)).
    The reference only ever reads the judge's private `values`, never memory the candidate can
    write (a thread it left behind could change shared inputs while the reference runs)."""
    if device.type == "cuda" and via == "ipc":
        # each tensor in a CUDA allocation of its own: its handle maps nothing else of the judge
        copies = [map_tensors(v, cuda_ipc.copy_of) for v in values]
        return export_values(copies, folder, prefix, via), tensors_in(copies)
    descs = export_values(values, folder, prefix, via)
    return descs, [open_tensor(d, folder, 1 << 62) for d in described_tensors(descs)]


def add_output_buffers(
    into: list[torch.Tensor], specs: list[Any], limit: int, device: torch.device
) -> str:
    """Append a buffer per output spec (NaN-filled where floating point) to `into`; the problem
    with the specs, or "" when every buffer was made within `limit` bytes."""
    total = 0
    for spec in specs:
        dtype = DTYPES.get(str(spec.get("dtype"))) if isinstance(spec, dict) else None
        shape = spec.get("shape") if isinstance(spec, dict) else None
        if (
            dtype is None
            or not isinstance(shape, list)
            or not all(isinstance(n, int) and n >= 0 for n in shape)
        ):
            return "malformed output spec"
        numel = 1
        for n in shape:
            numel *= n
        total += numel * torch.empty((), dtype=dtype).element_size()
        if total > limit:
            return f"outputs of {total} bytes are more than this task can produce"
        buf = cuda_ipc.empty(numel, dtype, device).view(shape)
        into.append(buf.fill_(float("nan")) if dtype.is_floating_point else buf)
    return ""


def received_outputs(
    items: list[Any], buffers: list[torch.Tensor], folder: str, max_bytes: int
) -> tuple[list[Any], str]:
    """The candidate's outputs from their descriptors (copied into `buffers`, exchange files of at
    most `max_bytes`, or plain values), and the last problem found ("" when none)."""
    outs: list[Any] = []
    problem = ""
    pending = 0
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            problem = f"output {i} is not described"
        elif "pending" in item:
            if not item.get("plain", False):
                problem = f"output {i}: expected a plain torch.Tensor, got a tensor subclass"
            if len(buffers) <= pending:
                problem = f"output {i} was not copied into the judge's buffers"
            else:
                outs.append(buffers[pending])
            pending += 1
        elif "tensor" in item:
            if not item.get("plain", False):
                problem = f"output {i}: expected a plain torch.Tensor, got a tensor subclass"
            outs.append(placed(item["tensor"], open_tensor(item["tensor"], folder, max_bytes)))
        elif "value" in item:
            outs.append(item["value"])
        else:
            problem = (
                f"output {i}: expected a plain torch.Tensor, got {str(item.get('other'))[:60]}"
            )
    return outs, problem


def input_checks(label: str, changed: list[int], aliased: list[Any]) -> list[Check]:
    """The checks made before comparing: the inputs as the judge wrote them, and fresh outputs."""
    return [
        Check(
            "inputs_unchanged",
            not changed,
            f"{label}: inputs were modified by the candidate (input {changed}); a kernel must not "
            "write its inputs"
            if changed
            else "inputs unchanged",
        ),
        Check(
            "no_alias",
            not aliased,
            f"{label}: output {aliased} aliases an input or a parameter; allocate new outputs"
            if aliased
            else "outputs are fresh memory",
        ),
    ]
