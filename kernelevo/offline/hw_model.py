"""A rough model of the GPU for ordering launch configurations before any is timed.

The parameter search pays one GPU evaluation per configuration, so the first few should be
plausible ones: enough work per thread to keep loads wide and in flight (4 to 16 elements for a
1-D block, 32 to 128 accumulator values for a 2-D tile) and a tile whose operands fit the shared
memory with its pipeline stages. A lower `prior` is a likelier good configuration; it ranks,
it never refuses (the timing decides).
"""

from __future__ import annotations

import math
import re

SMEM_BYTES = 227 * 1024  # Hopper's per-block maximum
TILE = re.compile(r"BLOCK|TILE|^B[MNK]$", re.I)


def _groups(config: dict[str, int]) -> dict[str, dict[str, int]]:
    """Tunables by launch: "kernel.NAME@L12" -> {"kernel@L12": {"NAME": value}}."""
    out: dict[str, dict[str, int]] = {}
    for name, value in config.items():
        head, _, line = name.partition("@")
        kernel, _, param = head.rpartition(".")
        out.setdefault(f"{kernel}@{line}", {})[param or head] = value
    return out


def _outside(value: float, lo: float, hi: float) -> float:
    """How many doublings value lies outside [lo, hi]."""
    if value <= 0:
        return 8.0
    return max(0.0, math.log2(lo / value), math.log2(value / hi))


def prior(config: dict[str, int]) -> float:
    cost = 0.0
    for params in _groups(config).values():
        threads = 32 * params.get("num_warps", 4)
        tiles = {k: v for k, v in params.items() if TILE.search(k) and "GROUP" not in k.upper()}
        m = next((v for k, v in tiles.items() if k.upper().endswith(("_M", "BM"))), None)
        n = next((v for k, v in tiles.items() if k.upper().endswith(("_N", "BN"))), None)
        k = next((v for k_, v in tiles.items() if k_.upper().endswith(("_K", "BK"))), None)
        if m and n:
            cost += _outside(m * n / threads, 32, 128)
            if k:
                smem = (m + n) * k * 4 * max(1, params.get("num_stages", 3) - 1)
                cost += 4.0 if smem > SMEM_BYTES else 0.0
        elif tiles:
            cost += _outside(math.prod(tiles.values()) / threads, 4, 16)
    return cost
