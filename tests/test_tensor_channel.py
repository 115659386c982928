"""kernelevo/tensor_channel.py on the CPU: a tensor crosses as a shared-memory file and a
descriptor; a descriptor that is malformed or claims more than its file holds is refused."""

import pytest
import torch

from kernelevo.tensor_channel import (
    ChannelError,
    crossable,
    export_tensor,
    export_values,
    open_tensor,
    open_values,
)


def test_a_tensor_crosses_as_a_file_and_a_descriptor(tmp_path):
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)[:, 1:]
    desc = export_tensor(t, str(tmp_path), "x0", via="file")
    got = open_tensor(desc, str(tmp_path), max_bytes=1 << 20)
    assert torch.equal(got, t)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"shape": [3, "4"]}, "malformed tensor descriptor"),
        ({"stride": [4]}, "malformed tensor descriptor"),
        ({"offset": True}, "malformed tensor descriptor"),
        ({"offset": -1}, "negative"),
        ({"numel": "12"}, "malformed shared-memory descriptor"),
        ({"shape": [300, 4]}, "does not fit its file"),
        ({"file": "../x0"}, "malformed shared-memory descriptor"),
    ],
)
def test_a_bad_descriptor_is_refused(tmp_path, change, message):
    desc = export_tensor(torch.ones(3, 4), str(tmp_path), "x0", via="file")
    with pytest.raises(ChannelError, match=message):
        open_tensor({**desc, **change}, str(tmp_path), max_bytes=1 << 20)


def _ipc_desc(**cuda_ipc):
    fields = {"device": 0, "handle": b"\1" * 64, "size": 48, **cuda_ipc}
    return {"dtype": "float32", "shape": [3, 4], "stride": [4, 1], "offset": 0, "cuda_ipc": fields}


def test_a_cuda_ipc_handle_is_never_opened_where_candidates_send_them(tmp_path, monkeypatch):
    """The judge maps nothing a candidate describes: only the candidate process accepts handles."""
    import kernelevo.tensor_channel as channel

    monkeypatch.setattr(channel, "_accept_ipc", False)
    with pytest.raises(ChannelError, match="not opened in this process"):
        open_tensor(_ipc_desc(), str(tmp_path), max_bytes=1 << 20)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"handle": b"\1" * 63}, "malformed CUDA IPC descriptor"),
        ({"handle": "ab"}, "malformed CUDA IPC descriptor"),
        ({"size": True}, "malformed CUDA IPC descriptor"),
        ({"size": 40}, "exceeds what it may describe"),
        ({"size": 1 << 30}, "exceeds what it may describe"),
    ],
)
def test_a_bad_cuda_ipc_descriptor_is_refused_before_any_cuda_call(
    tmp_path, monkeypatch, change, message
):
    import kernelevo.tensor_channel as channel

    monkeypatch.setattr(channel, "_accept_ipc", True)
    with pytest.raises(ChannelError, match=message):
        open_tensor(_ipc_desc(**change), str(tmp_path), max_bytes=1 << 20)


def test_the_probe_must_arrive_by_handle_with_its_values_on_a_gpu(tmp_path):
    """A probe that came through a file while CUDA IPC was asked for sends the engine to files."""
    desc = export_tensor(torch.arange(8, dtype=torch.float32), str(tmp_path), "probe", via="file")
    from kernelevo.tensor_channel import probe_arrived

    assert probe_arrived(desc, str(tmp_path), torch.device("cpu"), "ipc")
    assert not probe_arrived(desc, str(tmp_path), torch.device("cuda"), "ipc")
    assert probe_arrived(desc, str(tmp_path), torch.device("cuda"), "file")
    assert probe_arrived(None, str(tmp_path), torch.device("cuda"), "ipc")


def test_a_config_object_crosses_as_its_fields(tmp_path):
    """nanoGPT's, llm.c's and gpt-fast's modules take a config dataclass: the judge sends its
    fields (tensors and dicts inside it too), the candidate's ModelNew gets a namespace of them;
    a module or a class does not cross."""
    import dataclasses
    import types

    @dataclasses.dataclass
    class ModelArgs:
        dim: int = 64
        rope_scaling: dict | None = None
        table: torch.Tensor | None = None

    cfg = ModelArgs(rope_scaling={"factor": 8.0}, table=torch.ones(3))
    sent = export_values([cfg, types.SimpleNamespace(n_embd=32)], str(tmp_path), "init", via="file")
    got = open_values(sent, str(tmp_path), max_bytes=1 << 20)
    assert isinstance(got[0], types.SimpleNamespace) and got[0].dim == 64
    assert got[0].rope_scaling == {"factor": 8.0} and torch.equal(got[0].table, torch.ones(3))
    assert got[1].n_embd == 32
    for other in (torch.nn.Linear(2, 2), ModelArgs):
        with pytest.raises(ChannelError, match="only tensors, plain values"):
            export_values([other], str(tmp_path), "init", via="file")
    with pytest.raises(ChannelError, match="malformed"):
        open_values([{"namespace": {1: {"value": 2}}}], str(tmp_path), max_bytes=1 << 20)


def test_a_dict_of_other_plain_keys_crosses_as_pairs(tmp_path):
    """A Hugging Face config's id2label maps ints to names: the config crossed as its fields was
    refused ('give plain values') for that one field; keys stay what they were."""
    import types

    config = types.SimpleNamespace(hidden_size=64, id2label={0: "LABEL_0", 1: "LABEL_1"})
    sent = export_values(
        [config, {2.5: torch.ones(2), None: "x"}], str(tmp_path), "init", via="file"
    )
    assert crossable(config)
    got = open_values(sent, str(tmp_path), max_bytes=1 << 20)
    assert got[0].id2label == {0: "LABEL_0", 1: "LABEL_1"} and got[0].hidden_size == 64
    assert torch.equal(got[1][2.5], torch.ones(2)) and got[1][None] == "x"
    assert not crossable({(1, 2): 3})  # a tuple key is not a plain value
    with pytest.raises(ChannelError, match="malformed"):
        open_values([{"pairs": [[[1], {"value": 2}]]}], str(tmp_path), max_bytes=1 << 20)
