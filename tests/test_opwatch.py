import torch

from kernelevo.verify.opwatch import library_op_check
from kernelevo.verify.opwatch import OpRecorder


def test_recorder_sees_ops_and_separates_neutral():
    x = torch.randn(4, 4)
    with OpRecorder() as rec:
        y = torch.empty_like(x)
        y.copy_(x)
        torch.softmax(x, -1)
    assert "aten._softmax" in rec.ops and rec.compute_ops() == {"aten._softmax"}


def test_reference_ops_banned_by_family_unless_allowed():
    ref = {"aten.addmm", "aten.relu"}
    c = library_op_check(ref, {"aten.mm": 1, "aten.empty": 2}, [])
    assert not c.passed and c.detail["banned"] == ["aten.mm"]
    assert library_op_check(ref, {"aten.mm": 1}, ["aten.addmm"]).passed
    ok = library_op_check(ref, {"aten.empty": 1}, [])
    assert ok.passed and ok.detail["used"] == []
