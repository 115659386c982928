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
