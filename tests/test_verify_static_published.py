"""The static checks on the published kernels of the replay corpus (bench/replay/manifest.json):
every kernel its authors judged correct passes, but for the four refused by a stated policy. A new
rule that refuses a legitimate published kernel fails here, on the CPU, before any GPU run."""

import json
from pathlib import Path

from kernelevo.verify.static import check_source

ROOT = Path(__file__).resolve().parents[1] / "bench" / "replay"
# id -> what the refusal says (docs/FORMATS.md states each policy)
STATED = {
    "kbf-l2-47": "assigning torch.backends.cudnn.benchmark changes global state",
    "kbf-l2-79": "import of tao_triton_util is not allowed",
    "kbl-l3-29-r3": "no kernel",
    "kbl-l3-30-r1": "no kernel",
}


def test_published_kernels_pass_but_for_stated_policies():
    entries = json.loads((ROOT / "manifest.json").read_text())["entries"]
    honest = [e for e in entries if e["author_verdict"] == "correct" and e["backend"] != "none"]
    assert len(honest) >= 465
    refused = {}
    for e in honest:
        report = check_source((ROOT / e["candidate"]).read_text(), Path(e["candidate"]).name)
        if not report.ok:
            refused[e["id"]] = report.problems[0]
    assert set(refused) == set(STATED), refused
    for kernel_id, why in STATED.items():
        assert why in refused[kernel_id], refused[kernel_id]
