"""Headers, quirks and refusals of the codec."""
from __future__ import annotations

import struct

import pytest

from rafka.common.errors import InvalidRequestError, UnsupportedVersionError
from rafka.net.protocol import codec
from rafka.net.protocol.codec import ProtocolError


def _request(api_key, version, body, client_id="c"):
    return memoryview(codec.encode_request(api_key, version, 99, client_id, body))[4:]


def test_api_versions_v3_response_header_has_no_tagged_fields():
    parts = codec.encode_response(18, 3, 0x01020304, {})
    frame = b"".join(parts)
    # correlation id, then the body's error_code directly: response header v0 (KIP-511).
    assert frame[:6] == b"\x01\x02\x03\x04\x00\x00"


def test_metadata_v9_response_header_has_tagged_fields():
    frame = b"".join(codec.encode_response(3, 9, 0x01020304, {"throttle_time_ms": 0x7F}))
    assert frame[:5] == b"\x01\x02\x03\x04\x00"  # header v1: empty tagged-field section
    assert frame[5:9] == b"\x00\x00\x00\x7f"
    frame8 = b"".join(codec.encode_response(3, 8, 0x01020304, {"throttle_time_ms": 0x7F}))
    assert frame8[4:8] == b"\x00\x00\x00\x7f"  # header v0 before flexible versions


def test_flexible_request_header_client_id_is_classic_string():
    frame = _request(18, 3, {}, client_id="abc")
    assert bytes(frame[8:13]) == b"\x00\x03abc"
    assert frame[13] == 0  # header v2 tagged fields
    header, pos = codec.decode_request_header(frame)
    assert header.client_id == "abc" and pos == 14


def test_unknown_api_key_header_reads_fixed_fields_only():
    frame = struct.pack(">hhih", 999, 3, 5, 2) + b"id" + b"\x07junk"
    header, pos = codec.decode_request_header(memoryview(frame))
    assert header == codec.RequestHeader(999, 3, 5, "id") and pos == 12
    assert not header.supported
    with pytest.raises(UnsupportedVersionError):
        codec.decode_request(memoryview(frame))


def test_unsupported_version_of_known_api_is_refused_after_header():
    frame = struct.pack(">hhih", 18, 7, 5, -1) + b"\x00\x00"
    header, pos = codec.decode_request_header(memoryview(frame))
    assert header.client_id is None and pos == 10 and not header.supported
    with pytest.raises(UnsupportedVersionError):
        codec.decode_request(memoryview(frame))
    with pytest.raises(UnsupportedVersionError):
        codec.encode_response(0, 2, 1, {})  # Produce v0-2: advertised, refused (KAFKA-18659)


def test_protocol_error_is_an_invalid_request():
    assert issubclass(ProtocolError, InvalidRequestError)


def test_unknown_tagged_fields_are_skipped():
    frame = bytearray(_request(18, 3, {"client_software_name": "n", "client_software_version": "v"}))
    assert frame[-1] == 0
    frame[-1:] = b"\x02" + b"\x05\x03abc" + b"\x7f\x00"  # two unknown tags
    _, body = codec.decode_request(memoryview(bytes(frame)))
    assert body == {"client_software_name": "n", "client_software_version": "v"}


def test_tagged_field_written_only_when_not_default():
    base = b"".join(codec.encode_response(18, 3, 1, {}))
    with_tag = b"".join(codec.encode_response(18, 3, 1, {"zk_migration_ready": True}))
    assert base[-1] == 0 and with_tag.endswith(b"\x01\x03\x01\x01")


def test_trailing_bytes_are_ignored():
    frame = bytes(_request(12, 4, {"group_id": "g", "generation_id": 3, "member_id": "m"})) + b"xyz"
    _, body = codec.decode_request(memoryview(frame))
    assert body["generation_id"] == 3


@pytest.mark.parametrize("cut", range(1, 40))
def test_truncated_produce_frame_is_a_protocol_error(cut):
    frame = bytes(_request(0, 9, {"acks": 1, "timeout_ms": 5, "topic_data": [
        {"name": "topic", "partition_data": [{"index": 0, "records": b"0123456789"}]}]}))
    assert len(frame) > 40
    with pytest.raises(ProtocolError):
        codec.decode_request(memoryview(frame[:-cut]))


def test_absurd_lengths_are_refused_before_allocating():
    hdr = struct.pack(">hhih", 0, 7, 1, -1)
    # Produce v7: transactional_id null, acks, timeout, then topic_data with 2**31-1 elements.
    frame = hdr + b"\xff\xff" + struct.pack(">hii", 1, 5, 0x7FFFFFFF)
    with pytest.raises(ProtocolError, match="array length"):
        codec.decode_request(memoryview(frame))
    frame = hdr + struct.pack(">h", 0x7FFF) + b"ab"  # string longer than the frame
    with pytest.raises(ProtocolError):
        codec.decode_request(memoryview(frame))
    frame = hdr + struct.pack(">h", -2)  # negative non-null length
    with pytest.raises(ProtocolError):
        codec.decode_request(memoryview(frame))
    # Flexible: a 5-byte varint of ~2**32 as compact array length; then a 6-byte varint.
    hdr9 = struct.pack(">hhih", 0, 9, 1, -1) + b"\x00"
    with pytest.raises(ProtocolError):
        codec.decode_request(memoryview(hdr9 + b"\x00" + struct.pack(">hi", 1, 5) + b"\xff\xff\xff\xff\x0f"))
    with pytest.raises(ProtocolError, match="varint"):
        codec.decode_request(memoryview(hdr9 + b"\x00" + struct.pack(">hi", 1, 5) + b"\xff" * 6 + b"\x01"))


def test_non_null_length_required_for_non_nullable_fields():
    hdr = struct.pack(">hhih", 12, 0, 1, -1)
    with pytest.raises(ProtocolError):
        codec.decode_request(memoryview(hdr + b"\xff\xff"))  # null group_id


def test_invalid_utf8_is_a_protocol_error():
    hdr = struct.pack(">hhih", 12, 0, 1, -1)
    frame = hdr + b"\x00\x02\xff\xfe" + struct.pack(">i", 1) + b"\x00\x01m"
    with pytest.raises(ProtocolError):
        codec.decode_request(memoryview(frame))


class _FileRegion:
    """Stands in for a file slice the front-end sends with os.sendfile."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def __bytes__(self) -> bytes:
        return self.data


@pytest.mark.parametrize("version", [4, 11, 12])
def test_non_bytes_records_become_their_own_part(version):
    region = _FileRegion(b"R" * 33)
    body = {"responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "records": region}, {"partition_index": 1, "records": b"inline"}]}]}
    parts = codec.encode_response(1, version, 3, body)
    assert [p for p in parts if not isinstance(p, (bytes, bytearray))] == [region]
    assert len(parts) == 3
    joined = b"".join(bytes(p) for p in parts)
    _, got = codec.decode_response(1, version, joined)
    recs = [bytes(p["records"]) for p in got["responses"][0]["partitions"]]
    assert recs == [b"R" * 33, b"inline"]
    assert codec.frame_response(1, version, 3, body)[4:] == joined


def test_memoryview_records_are_copied_into_chunks():
    body = {"responses": [{"topic": "t", "partitions": [{"records": memoryview(b"abc")}]}]}
    parts = codec.encode_response(1, 12, 3, body)
    assert len(parts) == 1 and b"abc" in parts[0]


def test_read_frame_size():
    assert codec.read_frame_size(b"\x00\x00") is None
    assert codec.read_frame_size(b"\x00\x00\x01\x00") == 256
    with pytest.raises(ProtocolError):
        codec.read_frame_size(b"\xff\xff\xff\xff")


def test_precompile_covers_every_version():
    assert codec.precompile() > 500
