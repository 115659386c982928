"""Which template candidates the offline search sends to the GPU: a float32 Triton GEMM without
TF32 is not tried where a template keeps the library GEMM (it would cost a verdict for nothing)."""

from pathlib import Path

from kernelevo.offline import drop_ieee_gemms
from kernelevo.offline.match import instantiate_report

REPO = Path(__file__).resolve().parents[1]


def test_ieee_triton_gemms_give_way_to_the_library_gemm() -> None:
    report = instantiate_report(
        REPO / "bench" / "kernelbench" / "level2" / "76_Gemm_Add_ReLU.py", check=False
    )
    names = [n for n, _ in report.candidates]
    assert {"gemm_epilogue", "library_epilogue"} <= set(names), names
    kept, note = drop_ieee_gemms(list(report.candidates))
    assert [n for n, _ in kept] == ["library_epilogue"]
    assert note.startswith("offline templates: gemm_epilogue, gemm_epilogue_large not tried")


def test_tf32_gemms_and_gemms_without_a_library_alternative_stay() -> None:
    tf32 = [
        ("gemm_epilogue", "tl.dot(a, b, acc, input_precision='tf32')"),
        ("library_epilogue", ""),
    ]
    assert drop_ieee_gemms(tf32) == (tf32, "")
    alone = [("gemm_epilogue", "tl.dot(a, b, acc, input_precision='ieee')")]
    assert drop_ieee_gemms(alone) == (alone, "")


def test_a_cpu_search_of_a_task_without_small_sizes_extracts_at_the_size_it_verifies(
    tmp_path: Path,
) -> None:
    """Without a GPU, verdicts use the task's SMALL shapes where it has them and its own shapes
    otherwise; the Inductor extraction was asked for SMALL shapes regardless, and a task without
    them lost its Inductor seed to "size 'small' asked for but the task has no SMALL overrides"."""
    from kernelevo.optimize import offline_seeds
    from kernelevo.task import read_task

    path = tmp_path / "relu_twice.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return torch.relu(x) * 2\n\n\n"
        "def get_inputs():\n    return [torch.randn(64, 128)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    notes: list[str] = []
    seeds = offline_seeds(read_task(path), "cpu", None, notes.append)
    assert not [n for n in notes if "SMALL" in n], notes
    assert "inductor" in [origin for origin, _ in seeds], (seeds, notes)


BROKEN_INPUTS = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    raise ValueError("no such dataset")


def get_init_inputs():
    return []
"""


def test_a_task_that_fails_on_its_own_is_the_tasks_error_in_one_line(tmp_path: Path) -> None:
    """The offline search is the first to run a task's get_inputs(): a task that raises there
    ends the search with the task's line, not with 'no verified candidate' and a hint to ask a
    model (which could not help)."""
    import pytest

    from kernelevo.offline.match import trace_graph
    from kernelevo.task import TaskError

    task = tmp_path / "broken.py"
    task.write_text(BROKEN_INPUTS)
    with pytest.raises(TaskError) as caught:
        trace_graph(task)
    assert str(caught.value) == (
        f"{task.resolve()}:10: get_inputs() raised ValueError: no such dataset: the task fails "
        "on its own, before any candidate runs; fix it"
    )
    from support import run_kernelevo

    r = run_kernelevo(["optimize", "broken.py", "--iterations", "1"], tmp_path, timeout=300)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1] == f"kernelevo: error: {caught.value}"
