"""The one terminal table renderer (kernelevo/cli/table.py) behind `kernelevo runs`, `optimize`,
`bench` and the benchmark scripts."""

import pytest

from kernelevo.cli.table import render


def test_columns_pad_to_their_widest_cell_without_trailing_blanks():
    lines = render(
        [("run", "state", "vs eager"), ("r-1", "crashed", "-"), ("r-22", "done", "1.52x")]
    )
    assert lines == [
        "run   state    vs eager",
        "r-1   crashed  -",
        "r-22  done     1.52x",
    ]


def test_a_rule_goes_under_the_heading_and_cells_become_text():
    assert render([("n", "ms"), (3, 0.25)], rule=True) == ["n  ms", "-  ----", "3  0.25"]
    assert render([]) == []


def test_a_row_of_another_length_is_refused():
    with pytest.raises(ValueError):
        render([("a", "b"), ("only one",)])
