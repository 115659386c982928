"""Small sizes for the CPU, derived from captured or written example inputs.

Inputs taken from a script, a test, a comment or a decorator have the sizes of real use; the
Triton interpreter on a CPU takes minutes on them. Each large size becomes a named constant of
the task (`_KERNELEVO_N4096 = 4096`) and `SMALL` maps the names to small values, so a GPU still
verifies the captured sizes and a CPU-only machine a scaled-down copy. The same value always
maps to the same small value (a Linear's width and its input's last dimension stay equal), and
the task is run once at the small sizes before they are kept (`build_task`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field

LARGE = 64  # sizes above this are scaled down


@dataclass
class SmallSizes:
    """Captured size -> small size; `failed` says why the small copy was not kept."""

    sizes: dict[int, int] = field(default_factory=dict)
    failed: str = ""

    def name(self, value: int) -> str:
        return f"_KERNELEVO_N{value}"

    def constants(self) -> str:
        """The module-level text: one constant per size, then SMALL unless it failed."""
        if not self.sizes:
            return ""
        lines = [f"{self.name(v)} = {v}" for v in sorted(self.sizes)]
        mapping = ", ".join(f"{self.name(v)!r}: {s}" for v, s in sorted(self.sizes.items()))
        if self.failed:
            lines.append(f"# no SMALL: the derived small sizes did not run ({self.failed[:200]})")
        else:
            lines.append(
                "# Derived by KernelEvo from the sizes above: a CPU-only machine verifies these\n"
                "# small sizes (Triton interpreter); a GPU verifies the sizes as given.\n"
                f"SMALL = {{{mapping}}}"
            )
        return "\n".join(lines)

    def describe(self) -> str:
        """The task header's `CPU sizes` line."""
        pairs = ", ".join(f"{v}->{s}" for v, s in sorted(self.sizes.items()))
        if self.failed:
            return f"as given (small sizes {pairs} did not run: {self.failed[:160]})"
        return f"small ({pairs}), derived from the given sizes; a GPU uses them as given"


def small_of(value: int) -> int:
    """A small size that keeps the value's odd part and low powers of two when it can."""
    s = value
    while s > LARGE and s % 2 == 0:
        s //= 2
    if s > LARGE:  # a large odd size (781, 50257): stay odd, so masking is still exercised
        s = 33 + 2 * ((s // 2) % 15)
    return s


def derive(values: Iterable[int], keep: Iterable[int] = ()) -> SmallSizes:
    """Small sizes for the large values, distinct where the values are; `keep` stays as it is."""
    held = set(keep)
    out: dict[int, int] = {}
    used: set[int] = set()
    for v in sorted({v for v in values if isinstance(v, int) and v > LARGE and v not in held}):
        s = small_of(v)
        while s in used:
            s += 2
        used.add(s)
        out[v] = s
    return SmallSizes(out)


def ints_in_spec(spec: dict) -> list[int]:
    """Sizes of a captured value: tensor dimensions and plain int arguments."""
    kind = spec.get("kind")
    if kind == "tensor":
        return [int(d) for d in spec["shape"]]
    if kind == "value":
        v = _int_literal(spec.get("repr", ""))
        return [] if v is None else [v]
    if kind in ("list", "tuple"):
        return [v for s in spec["items"] for v in ints_in_spec(s)]
    if kind == "dataclass":
        return [v for text in spec["fields"].values() if (v := _int_literal(text)) is not None]
    return []


def held_by_configs(specs: Iterable[dict]) -> set[int]:
    """Int fields of config objects saved as data: those cannot be scaled, so sizes equal to them stay."""
    held: set[int] = set()
    for spec in specs:
        if spec.get("kind") == "config":
            values = list((spec.get("values") or {}).values()) + list(spec.get("ints") or [])
            held |= {v for v in values if isinstance(v, int) and not isinstance(v, bool)}
    return held


def _int_literal(text: str) -> int | None:
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def large_ints_in_expr(text: str) -> list[int]:
    """Int literals above LARGE in a Python expression the user wrote (a comment or decorator)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return []
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, int)
        and not isinstance(n.value, bool)
        and n.value > LARGE
    ]


def name_sizes_in_expr(text: str, small: SmallSizes) -> str:
    """`text` with each int literal that has a small size replaced by its constant's name."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return text
    data = text.encode()  # the parser's column offsets count UTF-8 bytes
    lines = data.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    spans = sorted(
        (
            (
                starts[n.lineno - 1] + n.col_offset,
                starts[(n.end_lineno or n.lineno) - 1] + (n.end_col_offset or 0),
                n.value,
            )
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant)
            and isinstance(n.value, int)
            and not isinstance(n.value, bool)
            and n.value in small.sizes
        ),
        reverse=True,
    )
    for begin, end, value in spans:
        data = data[:begin] + small.name(value).encode() + data[end:]
    return data.decode()
