"""kernelevo/tensor_channel.py on the CPU: a tensor crosses as a shared-memory file and a
descriptor; a descriptor that is malformed or claims more than its file holds is refused."""

import pytest
import torch

from kernelevo.tensor_channel import ChannelError, export_tensor, open_tensor


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
