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


def test_an_optional_field_takes_its_kind_or_none_and_nothing_else():
    from kernelevo.worker.candidate_replies import Opened

    assert Opened.parse({"opened": 7}).opened == 7 and Opened.parse({}).opened is None
    for forged in ("7", [7], {"pid": 7}, True):
        with pytest.raises(protocol.ProtocolError, match=r"Opened\.opened: "):
            Opened.parse({"opened": forged})
