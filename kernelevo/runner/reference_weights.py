"""The reference's weights given to ModelNew: the judge's randomised state matched by meaning
(checks/weights.py), or, where nothing matches, both models kept as built from the same seed.

Runs in the candidate process, on the state the judge sent as data; the reference module itself
never comes here.
"""

from __future__ import annotations

from typing import Any

import torch


class ReferenceState:
    """The reference's state as it arrived (names in registration order): what checks/weights.py reads."""

    def __init__(self, state: dict[str, torch.Tensor]) -> None:
        self.state = state

    def state_dict(self) -> dict[str, torch.Tensor]:
        return dict(self.state)


def load_reference_weights(
    new: torch.nn.Module,
    randomised: dict[str, torch.Tensor],
    initial: dict[str, torch.Tensor],
    seed: int,
    same_seed_only: bool,
) -> dict[str, Any]:
    """ModelNew (built from `seed`, like the reference) gets the reference's randomised weights
    matched by meaning; where none match, or with `same_seed_only`, it keeps its own from the seed."""
    from kernelevo.checks.weights import load_weights, transformed_at_construction, weight_plan

    plan = None if same_seed_only else weight_plan(ReferenceState(randomised), new)
    if plan is None:
        why = (
            "transforms its weights at construction (they differ from Model's at the same seed)"
            if same_seed_only
            else "parameters and buffers match Model's neither by name nor by shape"
        )
        return {
            "plan": False,
            "transformed": False,
            "weights_rule": f"ModelNew's {why}: both were built from seed {seed} (KernelBench's rule), weights "
            "not randomised",
        }
    transformed = transformed_at_construction(ReferenceState(initial), new, plan)
    return {
        "plan": True,
        "transformed": bool(transformed),
        "weights_rule": load_weights(ReferenceState(randomised), new, plan),
    }
