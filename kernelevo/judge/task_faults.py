"""The task on its own, before any candidate: a broken reference is the task's problem, said as such.

The reference runs alone on the verification's input sets, in the judge process (no
candidate code there): it must not raise or exit, must give the same outputs for the
same inputs (deterministic), must not keep state between calls (set A, set B, set A
again), must not modify its inputs, and get_inputs() must return random, finite tensors.
Memory is estimated on meta tensors first, so a task too large for the device is refused
before anything is allocated. A hang or a crash is caught by the engine's time limit on
this request and reported as the task's too.
"""

from __future__ import annotations

from typing import Any

import torch

from kernelevo.judge.outputs import compare_any_size
from kernelevo.judge.reference import Reference, TaskProblem, fingerprint, tensors


def probe(ref: Reference, seed: int) -> dict[str, Any]:
    need = ref.check_fits()
    ref.build(seed)
    where = ref.path
    first = ref.inputs(seed)
    if not tensors(first):
        raise TaskProblem(
            f"{where}: get_inputs() returned no tensors; return the forward's tensor arguments as a list"
        )
    before = fingerprint(first)
    out_a = ref.forward(first)
    if not any(isinstance(o, torch.Tensor) for o in tensors([out_a])):
        raise TaskProblem(
            f"{where}: Model.forward returned {type(out_a).__name__}, not a tensor; return its result"
        )
    if fingerprint(first) != before:
        raise TaskProblem(
            f"{where}: Model.forward modifies its inputs in place; a reference must leave them "
            "unchanged (clone before writing)"
        )
    out_again = ref.forward(first)
    ok, message, _ = compare_any_size(out_a, out_again, ref.tolerance)
    if not ok:
        raise TaskProblem(
            f"{where}: Model.forward is nondeterministic or keeps state between calls: two calls on "
            f"the same inputs differ ({message}); remove randomness (dropout in training mode, "
            "random ops) and state kept across calls (counters, caches, in-place buffers)"
        )
    del out_again
    second = ref.inputs(seed + 7919)
    ref.forward(second)
    del second
    out_later = ref.forward(first)
    ok, message, _ = compare_any_size(out_a, out_later, ref.tolerance)
    if not ok:
        raise TaskProblem(
            f"{where}: Model.forward keeps state between calls: the same inputs give different "
            f"outputs after another call ({message}); a reference must be a pure function of its "
            "inputs and weights"
        )
    for o in tensors([out_a]):
        if o.is_floating_point() and o.numel() and not bool(torch.isfinite(o).any()):
            raise TaskProblem(
                f"{where}: every output value of Model.forward is NaN or Inf on random inputs; "
                "fix the reference or its get_inputs()"
            )
    ref.model = None
    return {"probed": True, "n_extra": ref.n_extra(), **ref.memory_plan(need)}
