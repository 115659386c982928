"""Shapes read from a target's docstring: the styles real kernel code uses, one size per symbol
across arguments, expressions evaluated; and a task built from them where no generic guess fits."""

from pathlib import Path

from kernelevo.targets.docstring_shapes import documented_shapes
from kernelevo.targets.extract import build_task, check_task

# flash-attention's apply_rotary, as its docstring is written
ROTARY_DOC = """
Arguments:
    x: (batch, seqlen, nheads, headdim) if cu_seqlens is None
        else (total_seqlen, nheads, headdim).
    cos: (seqlen_ro, rotary_dim / 2)
    sin: (seqlen_ro, rotary_dim / 2)
    seqlen_offsets: integer or integer tensor of size (batch,)
Returns:
    y: (batch, seqlen, nheads, headdim)
"""


def test_flash_attention_style_shares_symbols_and_evaluates_expressions():
    shapes = documented_shapes(ROTARY_DOC, ["x", "cos", "sin"], [])
    assert shapes == {"x": (2, 16, 4, 64), "cos": (16, 32), "sin": (16, 32)}


def test_google_numpy_and_bracket_styles_and_the_module_widths():
    doc = (
        "Args:\n    x (Tensor): shape (B, T, C), the tokens\n"
        "    mask : Tensor of shape (B, T)\n    w: [C, 4 * C]\n    note: see (Su et al.)\n"
    )
    assert documented_shapes(doc, ["x", "mask", "w", "note"], [32]) == {
        "x": (2, 16, 32),
        "mask": (2, 16),
        "w": (32, 128),
    }


def test_mamba_style_space_separated_dims():
    """mamba's selective_scan_ref, as its docstring is written: the first reading of each."""
    doc = "u: r(B D L)\ndelta: r(B D L)\nA: c(D N) or r(D N)\nB: c(D N) or r(B N L) or r(B N 2L)\nD: r(D)\n"
    assert documented_shapes(doc, ["u", "delta", "A", "B", "D"], []) == {
        "u": (2, 8, 16),
        "delta": (2, 8, 16),
        "A": (8, 64),
        "B": (8, 64),
        "D": (8,),
    }


def test_prose_without_a_shape_gives_nothing():
    assert (
        documented_shapes("x: the input tensor\ny (Tensor): same size as x", ["x", "y"], []) == {}
    )
    assert documented_shapes(None, ["x"], []) == {}
    assert documented_shapes("bias: (optional) added\nx: (the input)", ["bias", "x"], []) == {}


def test_a_task_from_shapes_only_the_docstring_states(tmp_path: Path):
    """Every generic guess gives all tensors one shape; this function asserts they differ."""
    user = tmp_path / "rope.py"
    user.write_text(
        "import torch\n\n\ndef rope(x, cos, sin):\n    '''" + ROTARY_DOC + "    '''\n"
        "    batch, seqlen, nheads, headdim = x.shape\n    seqlen_ro, half = cos.shape\n"
        "    assert seqlen_ro >= seqlen and 2 * half <= headdim and sin.shape == cos.shape\n"
        "    x1, x2 = x[..., :half], x[..., half : 2 * half]\n"
        "    c, s = cos[:seqlen, None, :], sin[:seqlen, None, :]\n"
        "    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c, x[..., 2 * half :]], dim=-1)\n"
    )
    built = build_task(str(user), "rope", out_dir=str(tmp_path / "t"), timeout=90)
    assert "guessed from the signature of rope (shapes from its docstring, small sizes" in (
        built.inputs
    ), built.inputs
    check = check_task(built.path, timeout=240)
    assert check.ok is True, check.message
    assert "float32[2, 16, 4, 64], float32[16, 32], float32[16, 32]" in check.message, check.message


def test_the_suggested_example_takes_the_documented_shapes(tmp_path: Path):
    from kernelevo.targets.detect import analyze_source
    from kernelevo.targets.inputs import guess_inputs
    from kernelevo.targets.reference_call import resolve_reference

    user = tmp_path / "rope.py"
    user.write_text(
        "import torch\n\n\ndef rope(x, cos, sin, offset: int = 0):\n    '''" + ROTARY_DOC + "'''\n"
        "    return torch.cat([x * cos[:, None], x * sin[:, None]], dim=-1)\n"
    )
    a = analyze_source(user.read_text(), str(user))
    target = next(t for t in a.targets if t.id == "function:rope")
    g = guess_inputs(a, resolve_reference(a, target))
    assert g.inputs == ("(torch.randn(2, 16, 4, 64), torch.randn(16, 32), torch.randn(16, 32))"), (
        g.inputs
    )


REL_BIAS = '''import torch
from typing import Tuple


def rel_bias(q: torch.Tensor, rel: torch.Tensor, q_size: Tuple[int, int]) -> torch.Tensor:
    """
    Args:
        q (Tensor): queries with shape (B, q_h * q_w, C).
        rel (Tensor): embeddings (q_h, C).
        q_size (Tuple): spatial size of q with (q_h, q_w).
    """
    q_h, q_w = q_size
    b, _, c = q.shape
    return torch.einsum("bhwc,hc->bhw", q.reshape(b, q_h, q_w, c), rel)
'''


def test_a_size_pair_is_a_tuple_of_the_documented_sizes(tmp_path: Path):
    """segment-anything's `q_size: Tuple[int, int]` beside `q: (B, q_h * q_w, C)`: one symbol,
    one size, and the pair passed as ints, not as a tensor."""
    from kernelevo.targets.detect import analyze_source
    from kernelevo.targets.inputs import guess_inputs
    from kernelevo.targets.reference_call import resolve_reference

    user = tmp_path / "rel.py"
    user.write_text(REL_BIAS)
    a = analyze_source(REL_BIAS, str(user))
    g = guess_inputs(
        a, resolve_reference(a, next(t for t in a.targets if t.id == "function:rel_bias"))
    )
    assert g.inputs == "(torch.randn(2, 256, 64), torch.randn(16, 64), (16, 16))", g.inputs
    built = build_task(str(user), "rel_bias", out_dir=str(tmp_path / "t"), timeout=90)
    assert "shapes from its docstring" in built.inputs, built.inputs
    check = check_task(built.path, timeout=240)
    assert check.ok is True and "float32[2, 256, 64], float32[16, 64]" in check.message, (
        check.message
    )
