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
