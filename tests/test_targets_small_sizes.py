"""The CPU's small copy of sizes of real use: large sizes only, equal stays equal, distinct stays
distinct, odd stays odd, sizes a saved config holds stay as they are."""

from __future__ import annotations

from kernelevo.targets.small_sizes import (
    derive,
    held_by_configs,
    ints_in_spec,
    large_ints_in_expr,
    name_sizes_in_expr,
)


def test_large_sizes_get_small_distinct_values_and_odd_ones_stay_odd():
    small = derive([4096, 4096, 1000, 781, 50257, 64, 8])
    assert set(small.sizes) == {4096, 1000, 781, 50257}  # 64 and 8 are small already
    assert small.sizes[4096] == 64 and all(v <= 64 for v in small.sizes.values())
    assert small.sizes[781] % 2 == 1 and small.sizes[50257] % 2 == 1
    assert len(set(small.sizes.values())) == len(small.sizes)
    assert 768 not in derive([768, 3072], keep=[768]).sizes


def test_sizes_are_read_from_captured_values_and_configs_hold_theirs():
    spec = {
        "kind": "tuple",
        "items": [
            {"kind": "tensor", "shape": [2, 1024, 768]},
            {"kind": "value", "repr": "768"},
            {"kind": "value", "repr": "True"},
            {"kind": "dataclass", "type": "C", "fields": {"dim": "512", "eps": "1e-05"}},
        ],
    }
    assert ints_in_spec(spec) == [2, 1024, 768, 768, 512]
    config = {"kind": "config", "values": {"n_embd": 768, "bias": True, "name": "gpt"}}
    assert held_by_configs([config]) == {768}


def test_int_literals_of_an_expression_are_named_and_the_rest_kept():
    text = '(torch.randn(8, 4096), "é", torch.randint(0, 50257, (8, 4096)), 1e-5)'
    assert large_ints_in_expr(text) == [4096, 50257, 4096]
    small = derive(large_ints_in_expr(text))
    named = name_sizes_in_expr(text, small)
    assert named == (
        '(torch.randn(8, _KERNELEVO_N4096), "é", torch.randint(0, _KERNELEVO_N50257, '
        "(8, _KERNELEVO_N4096)), 1e-5)"
    )
    assert "SMALL = {'_KERNELEVO_N4096': 64, '_KERNELEVO_N50257': " in small.constants()
    small.failed = "RuntimeError: shape mismatch"
    assert "SMALL" not in small.constants().replace("no SMALL", "")
    assert small.describe().startswith("as given (small sizes 4096->64")
