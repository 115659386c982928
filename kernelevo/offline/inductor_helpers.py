"""Triton device functions that stand in for Inductor's runtime helpers in extracted candidates.

Inductor's kernels call `triton_helpers.*` (a torch-internal module) and `libdevice.*`
(which the Triton interpreter cannot run). A standalone candidate carries its own copies,
written here as source text and pasted into the candidate only when used.
"""

from __future__ import annotations

# name -> (source, helpers it calls)
HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "maximum": (
        """
@triton.jit
def _ke_maximum(a, b):
    # NaN wins, as in torch.maximum
    return tl.where((a > b) | (a != a), a, b)
""",
        (),
    ),
    "minimum": (
        """
@triton.jit
def _ke_minimum(a, b):
    return tl.where((a < b) | (a != a), a, b)
""",
        (),
    ),
    "max2": (
        """
@triton.jit
def _ke_max2(a, dim: tl.constexpr):
    return tl.reduce(a, dim, _ke_maximum)
""",
        ("maximum",),
    ),
    "min2": (
        """
@triton.jit
def _ke_min2(a, dim: tl.constexpr):
    return tl.reduce(a, dim, _ke_minimum)
""",
        ("minimum",),
    ),
    "promote_to_tensor": (
        """
@triton.jit
def _ke_promote_to_tensor(x):
    return x + tl.zeros((1,), tl.int1)
""",
        (),
    ),
    "is_floating": (
        """
@triton.jit
def _ke_is_floating(x):
    return (x + tl.zeros((1,), tl.int1)).dtype.is_floating()
""",
        (),
    ),
    "div_floor_integer": (
        """
@triton.jit
def _ke_div_floor_integer(a, b):
    quot = a // b
    inexact = (a % b) != 0
    return tl.where(inexact & ((a < 0) != (b < 0)), quot - 1, quot)
""",
        (),
    ),
    "remainder_integer": (
        """
@triton.jit
def _ke_remainder_integer(a, b):
    rem = a % b
    return tl.where((rem != 0) & ((rem < 0) != (b < 0)), rem + b, rem)
""",
        (),
    ),
    "welford_reduce": (
        """
@triton.jit
def _ke_welford_reduce(value, mean, m2, weight, first_iteration):
    new_weight = tl.where(first_iteration, 1.0, weight + 1)
    delta = value - mean
    new_mean = tl.where(first_iteration, value, mean + delta / new_weight)
    new_m2 = tl.where(first_iteration, 0.0, m2 + delta * (value - new_mean))
    return new_mean, new_m2, new_weight
""",
        (),
    ),
    "welford_combine": (
        """
@triton.jit
def _ke_welford_combine(mean_1, m2_1, weight_1, mean_2, m2_2, weight_2):
    delta = mean_2 - mean_1
    weight = weight_1 + weight_2
    share_2 = tl.where(weight == 0.0, 0.0, weight_2 / weight)
    return mean_1 + delta * share_2, m2_1 + m2_2 + delta * delta * weight_1 * share_2, weight
""",
        (),
    ),
    "welford": (
        """
@triton.jit
def _ke_welford(mean, m2, weight, dim: tl.constexpr):
    return tl.reduce((mean, m2, weight), dim, _ke_welford_combine)
""",
        ("welford_combine",),
    ),
    "any": (
        """
@triton.jit
def _ke_or(a, b):
    return a | b


@triton.jit
def _ke_any(a, dim: tl.constexpr):
    return tl.reduce(a, dim, _ke_or)
""",
        (),
    ),
    "maximum_with_index": (
        """
@triton.jit
def _ke_maximum_with_index(a_value, a_index, b_value, b_index):
    a_nan = a_value != a_value
    b_nan = b_value != b_value
    take_a = (a_value > b_value) | (a_nan & ~b_nan)
    tie = (a_value == b_value) | (a_nan & b_nan)
    take_a = take_a | (tie & (a_index < b_index))
    return tl.where(take_a, a_value, b_value), tl.where(take_a, a_index, b_index)
""",
        (),
    ),
    "minimum_with_index": (
        """
@triton.jit
def _ke_minimum_with_index(a_value, a_index, b_value, b_index):
    a_nan = a_value != a_value
    b_nan = b_value != b_value
    take_a = (a_value < b_value) | (a_nan & ~b_nan)
    tie = (a_value == b_value) | (a_nan & b_nan)
    take_a = take_a | (tie & (a_index < b_index))
    return tl.where(take_a, a_value, b_value), tl.where(take_a, a_index, b_index)
""",
        (),
    ),
    "max_with_index": (
        """
@triton.jit
def _ke_max_with_index(value, index, dim: tl.constexpr):
    return tl.reduce((value, index), dim, _ke_maximum_with_index)
""",
        ("maximum_with_index",),
    ),
    "min_with_index": (
        """
@triton.jit
def _ke_min_with_index(value, index, dim: tl.constexpr):
    return tl.reduce((value, index), dim, _ke_minimum_with_index)
""",
        ("minimum_with_index",),
    ),
    "exp": (
        """
@triton.jit
def _ke_exp(x, use_fast_math: tl.constexpr):
    return tl.exp(x)
""",
        (),
    ),
    # softmax in one pass: per lane a running maximum and a sum of exp(x - that maximum)
    "online_softmax_combine": (
        """
@triton.jit
def _ke_online_softmax_combine(acc_max, acc_sum, value, use_fast_math: tl.constexpr):
    new_max = _ke_maximum(acc_max, value)
    empty = new_max == float("-inf")
    rescale = tl.where(empty, 1.0, _ke_exp(acc_max - new_max, use_fast_math))
    added = tl.where(empty, 1.0, _ke_exp(value - new_max, use_fast_math))
    return new_max, acc_sum * rescale + added
""",
        ("maximum", "exp"),
    ),
    "online_softmax_combine_with_sum": (
        """
@triton.jit
def _ke_online_softmax_combine_with_sum(
    acc_max, acc_sum, value_max, value_sum, use_fast_math: tl.constexpr
):
    new_max = _ke_maximum(acc_max, value_max)
    empty = new_max == float("-inf")
    rescale = tl.where(empty, 1.0, _ke_exp(acc_max - new_max, use_fast_math))
    added = tl.where(empty, 1.0, _ke_exp(value_max - new_max, use_fast_math))
    return new_max, acc_sum * rescale + value_sum * added
""",
        ("maximum", "exp"),
    ),
    "online_softmax_reduce": (
        """
@triton.jit
def _ke_online_softmax_reduce(acc_max, acc_sum, dim: tl.constexpr, use_fast_math: tl.constexpr):
    row_max = _ke_max2(acc_max, dim)
    spread = tl.expand_dims(row_max, dim)
    shift = tl.where(spread == float("-inf"), 0, acc_max - spread)
    return row_max, tl.sum(acc_sum * _ke_exp(shift, use_fast_math), dim)
""",
        ("max2", "exp"),
    ),
    # the one element where `mask` is set, bit for bit (its bits summed with zeros: exact)
    "select_one": (
        """
@triton.jit
def _ke_select_one(x, mask, dim: tl.constexpr, keep_dims: tl.constexpr = False):
    bits = tl.core.get_int_dtype(x.dtype.primitive_bitwidth, signed=False)
    picked = tl.sum(tl.where(mask != 0, x.to(bits, bitcast=True), 0), dim, keep_dims=keep_dims)
    return picked.to(bits).to(x.dtype, bitcast=True)
""",
        (),
    ),
    # libdevice functions the interpreter lacks (used only for candidates extracted on the CPU)
    "tanh": (
        """
@triton.jit
def _ke_tanh(x):
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)
""",
        (),
    ),
    "log1p": (
        """
@triton.jit
def _ke_log1p(x):
    u = 1.0 + x
    # corrects the rounding of 1 + x (Goldberg's trick)
    return tl.where(u == 1.0, x, tl.log(u) * (x / (u - 1.0)))
""",
        (),
    ),
    "expm1": (
        """
@triton.jit
def _ke_expm1(x):
    u = tl.exp(x)
    um1 = u - 1.0
    # Kahan's correction of exp(x) - 1 near zero
    near = tl.where(u == 1.0, x, um1 * x / tl.log(u))
    return tl.where(tl.abs(x) < 0.5, near, um1)
""",
        (),
    ),
    "isnan": (
        """
@triton.jit
def _ke_isnan(x):
    return x != x
""",
        (),
    ),
    "isinf": (
        """
@triton.jit
def _ke_isinf(x):
    return tl.abs(x) == float("inf")
""",
        (),
    ),
    "trunc": (
        """
@triton.jit
def _ke_trunc(x):
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))
""",
        (),
    ),
}

# libdevice functions with a same-named, same-meaning triton.language function
LIBDEVICE_IN_TL = {
    "exp",
    "exp2",
    "log",
    "log2",
    "sin",
    "cos",
    "sqrt",
    "rsqrt",
    "abs",
    "floor",
    "ceil",
    "erf",
    "fma",
    "sigmoid",
}
# libdevice functions replaced by our own helpers when the candidate must run in the interpreter
LIBDEVICE_OWN = {"tanh", "log1p", "expm1", "isnan", "isinf", "trunc"}


def helper_sources(used: set[str]) -> str:
    """Source text of the used helpers and what they call, dependencies first."""
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        for dep in HELPERS[name][1]:
            visit(dep)
        order.append(name)

    for name in sorted(used):
        visit(name)
    return "\n".join(HELPERS[n][0].strip() + "\n\n" for n in order)
