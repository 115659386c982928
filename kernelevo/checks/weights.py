"""Giving ModelNew the reference's weights, matched by meaning rather than by name.

A candidate may call its `nn.Linear` `linear` where Model says `matmul`, or keep a bias as
its own parameter: names differ, the computation is the same. Parameters and buffers are
matched by name, else by registration order within each shape; only when neither fits, or
when ModelNew transforms its weights at construction (folds a constant in), are both modules
built from one seed (KernelBench's rule), which cannot randomise the weights.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def built_from_seed(
    make: Callable[[], torch.nn.Module], seed: int, device: torch.device, gpu: bool
) -> tuple[torch.nn.Module, str]:
    """`make()` under `torch.manual_seed(seed)`, drawn on `device` when `gpu` and it is one (the
    CPU's init of one 8192x8192 nn.Linear takes 0.44 s on the H200's host), else, or when the
    constructor cannot run there, on the CPU. One seed and one place give Model and ModelNew the
    same weights, so the judge says where it built and the candidate builds there too. Returns the
    module (not moved) and where it was built ("cuda" or "cpu"). A constructor that makes some of
    its tensors on the CPU even so (the legacy `torch.Tensor(n, m)` ignores the device) drew those
    from the CPU's generator, where the other model's `nn.Linear` drew from the GPU's: it is built
    on the CPU."""
    if gpu and device.type != "cpu":
        torch.manual_seed(seed)
        try:
            with torch.device(device):
                built = make()
            if all(t.device.type == device.type for t in _tensors(built)):
                return built, device.type
            del built
        except Exception:  # a constructor that needs the CPU (numpy, a CPU generator)
            pass
    torch.manual_seed(seed)
    with torch.device("cpu"):
        return make(), "cpu"


def _tensors(module: torch.nn.Module) -> list[torch.Tensor]:
    """Parameters and buffers, floating ones: those a seed draws."""
    return [t for t in [*module.parameters(), *module.buffers()] if t.is_floating_point()]


def weight_plan(ref: torch.nn.Module, new: torch.nn.Module) -> list[tuple[str, str]] | None:
    """(ModelNew name, Model name) pairs: by name where names and shapes agree, else by registration
    order within each shape; None when neither fits (then both come from one seed)."""
    rs, ns = ref.state_dict(), new.state_dict()
    if not rs and not ns:
        return []
    if set(rs) == set(ns) and all(rs[k].shape == ns[k].shape for k in rs):
        return [(k, k) for k in rs]
    by_shape: dict[tuple[int, ...], list[str]] = {}
    for k, v in rs.items():
        by_shape.setdefault(tuple(v.shape), []).append(k)
    plan = []
    for k, v in ns.items():
        same = by_shape.get(tuple(v.shape))
        if not same:
            return None
        plan.append((k, same.pop(0)))
    return plan if not any(by_shape.values()) else None


def load_weights(ref: torch.nn.Module, new: torch.nn.Module, plan: list[tuple[str, str]]) -> str:
    """Copy Model's (randomised) weights into ModelNew along `plan`; says which rule was used."""
    rs = ref.state_dict()
    if not plan:
        return "no parameters or buffers to match"
    if all(a == b for a, b in plan):
        new.load_state_dict(rs)
        return "weights copied from the reference by name (randomised)"
    new.load_state_dict({a: rs[b] for a, b in plan})
    renamed = [f"{a} <- {b}" for a, b in plan if a != b]
    return (
        f"weights mapped by registration order and shape (randomised): {', '.join(renamed[:4])}"
        + (f" and {len(renamed) - 4} more" if len(renamed) > 4 else "")
    )


def transformed_at_construction(
    ref: torch.nn.Module, new: torch.nn.Module, plan: list[tuple[str, str]]
) -> bool:
    """Built from the same seed, ModelNew's mapped weights differ from Model's: it changed them
    (or drew them in another order)."""
    rs, ns = ref.state_dict(), new.state_dict()
    return any(
        rs[b].is_floating_point() and not torch.equal(ns[a].to(rs[b].device, rs[b].dtype), rs[b])
        for a, b in plan
    )


def seed_varies_weights(task: Any, seed: int) -> bool:
    """Whether the seed decides Model's weights (nn.Linear's random init) rather than a fixed value."""
    init = list(task.get_init_inputs())
    states = []
    for s in (seed, seed + 1):
        torch.manual_seed(s)
        states.append(task.Model(*init).state_dict())
    return any(
        v.is_floating_point() and v.numel() and not torch.equal(v, states[1][k])
        for k, v in states[0].items()
    )
