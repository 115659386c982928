import io

import pytest

from kernelevo.worker import protocol


def test_roundtrip_frames():
    buf = io.BytesIO()
    protocol.write(buf, {"op": "verify", "n": 3, "data": [1.5, "x"]})
    protocol.write(buf, {"op": "exit"})
    buf.seek(0)
    assert protocol.read(buf) == {"op": "verify", "n": 3, "data": [1.5, "x"]}
    assert protocol.read(buf) == {"op": "exit"}
    assert protocol.read(buf) is None


def test_truncated_frame():
    data = protocol.encode({"op": "ping"})
    with pytest.raises(protocol.ProtocolError):
        protocol.read(io.BytesIO(data[:-2]))


@pytest.mark.parametrize("payload", [b"\x93\x01\x02\x03", b"\xc1"])
def test_a_frame_that_holds_no_map_is_a_protocol_error(payload):
    stream = io.BytesIO(protocol.HEADER.pack(len(payload)) + payload)
    with pytest.raises(protocol.ProtocolError):
        protocol.read(stream)
