"""Stored records (`DataSchema`) through the protocol codec: the same engine as the APIs, with
strict writing, version ranges, compact encodings and refusals."""
from __future__ import annotations

import struct

import pytest

from rafka.net.protocol import codec
from rafka.net.protocol.codec import EncodeError, ProtocolError
from rafka.net.protocol.schema import ARRAY, INT32, STRING, DataSchema, Field

# A schema in the style of Kafka's "type": "data" JSON: a field added in v1, one nullable,
# an array of structs, v2 flexible.
THING = DataSchema("Thing", (0, 2), 2, (
    Field("name", STRING),
    Field("size", INT32, versions="1+", default=-1),
    Field("note", STRING, nullable="0+"),
    Field("parts", ARRAY, fields=(Field("id", STRING), Field("n", INT32))),
))
VALUES = {"name": "a", "size": 7, "note": None, "parts": [{"id": "p", "n": 1}]}


def _s16(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


@pytest.mark.parametrize("version,expected", [
    (0, _s16("a") + b"\xff\xff" + struct.pack(">i", 1) + _s16("p") + struct.pack(">i", 1)),
    (1, _s16("a") + struct.pack(">i", 7) + b"\xff\xff" + struct.pack(">i", 1) + _s16("p") + struct.pack(">i", 1)),
    (2, b"\x02a" + struct.pack(">i", 7) + b"\x00" + b"\x02" + b"\x02p" + struct.pack(">i", 1) + b"\x00" + b"\x00"),
], ids=["v0-classic", "v1-added-field", "v2-flexible"])
def test_data_records_are_written_and_read_in_each_version(version, expected):
    assert bytes(codec.encode_data(THING, version, VALUES, bytearray())) == expected
    values, end = codec.decode_data(THING, version, b"xx" + expected + b"trailing", 2)
    assert end == 2 + len(expected)
    assert values == dict(VALUES, size=7 if version else -1)


def test_encode_data_appends_to_what_is_there():
    out = bytearray(b"\x00\x01")
    assert codec.encode_data(THING, 1, VALUES, out) is out and out.startswith(b"\x00\x01" + _s16("a"))


@pytest.mark.parametrize("values,message", [
    (dict(VALUES, name=None), "name is not nullable in version 1"),
    (dict(VALUES, parts=None), "parts is not nullable in version 1"),
    (dict(VALUES, parts=[{"id": None, "n": 1}]), "id is not nullable in version 1"),
    (dict(VALUES, name="x" * 32768), "name is longer than 32767 bytes"),
], ids=["null-string", "null-array", "null-in-struct", "string-too-long"])
def test_encode_data_is_strict(values, message):
    with pytest.raises(EncodeError, match=message):
        codec.encode_data(THING, 1, values, bytearray())


def test_the_request_writers_stay_lenient():
    # Metadata v0 request: topics is not nullable in v0; the lenient writer sends it empty.
    frame = codec.encode_request(3, 0, 1, None, {"topics": None})
    assert frame.endswith(b"\x00\x00\x00\x00")


@pytest.mark.parametrize("version", [-1, 3])
def test_a_version_outside_the_schema_is_refused(version):
    with pytest.raises(ValueError, match="no version"):
        codec.encode_data(THING, version, VALUES, bytearray())
    with pytest.raises(ValueError, match="no version"):
        codec.decode_data(THING, version, b"")


@pytest.mark.parametrize("data,message", [
    (_s16("a")[:2], "string past the end"),
    (_s16("a") + struct.pack(">i", 7), "malformed Thing v1"),
    (_s16("a") + struct.pack(">ih", 7, -1) + struct.pack(">i", 10**6), "array length past the end of the frame: "
                                                                        "1000000 elements in 0 bytes"),
    (b"\xff\xff", "string that is not nullable"),
], ids=["cut-string", "cut-int", "absurd-array", "null-string"])
def test_malformed_data_records_raise_protocol_error(data, message):
    with pytest.raises(ProtocolError, match=message):
        codec.decode_data(THING, 1, data)
