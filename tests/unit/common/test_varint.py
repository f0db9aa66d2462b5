"""Kafka's varints, the one implementation: Kafka's own byte vectors, round trips, refusals."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from rafka.common.varint import (
    VarintError, read_unsigned_varint, read_varint, read_varlong, size_of_unsigned_varint, size_of_varint,
    size_of_varlong, unsigned_varint_bytes, write_unsigned_varint, write_varint, write_varlong,
)

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# (value, bytes) as Kafka's ByteUtilsTest has them.
UNSIGNED = [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (16383, "ff7f"), (16384, "808001"),
            (INT32_MAX, "ffffffff07"), (0xFFFFFFFF, "ffffffff0f")]
VARINT = [(0, "00"), (-1, "01"), (1, "02"), (63, "7e"), (-64, "7f"), (64, "8001"), (-65, "8101"),
          (8191, "fe7f"), (-8192, "ff7f"), (8192, "808001"), (-8193, "818001"),
          (INT32_MAX, "feffffff0f"), (INT32_MIN, "ffffffff0f")]
VARLONG = VARINT[:-2] + [(INT32_MAX, "feffffff0f"), (INT32_MIN, "ffffffff0f"),
                         (INT64_MAX, "feffffffffffffffff01"), (INT64_MIN, "ffffffffffffffffff01")]


def _written(write, value: int) -> bytes:
    out = bytearray(b"head")
    write(value, out)
    assert out[:4] == b"head"  # appends, never rewrites
    return bytes(out[4:])


@pytest.mark.parametrize("value,hex_", UNSIGNED, ids=[str(v) for v, _ in UNSIGNED])
def test_unsigned_varint_bytes_are_kafkas(value, hex_):
    data = bytes.fromhex(hex_)
    assert _written(write_unsigned_varint, value) == unsigned_varint_bytes(value) == data
    assert size_of_unsigned_varint(value) == len(data)
    assert read_unsigned_varint(b"\x09" + data + b"\x09", 1) == (value, 1 + len(data))


@pytest.mark.parametrize("value,hex_", VARINT, ids=[str(v) for v, _ in VARINT])
def test_varint_bytes_are_kafkas(value, hex_):
    data = bytes.fromhex(hex_)
    assert _written(write_varint, value) == data and size_of_varint(value) == len(data)
    assert read_varint(data, 0) == (value, len(data))


@pytest.mark.parametrize("value,hex_", VARLONG, ids=[str(v) for v, _ in VARLONG])
def test_varlong_bytes_are_kafkas(value, hex_):
    data = bytes.fromhex(hex_)
    assert _written(write_varlong, value) == data and size_of_varlong(value) == len(data)
    assert read_varlong(memoryview(data), 0) == (value, len(data))


@pytest.mark.parametrize("write,read,size,lo,hi", [
    (write_varint, read_varint, size_of_varint, INT32_MIN, INT32_MAX),
    (write_varlong, read_varlong, size_of_varlong, INT64_MIN, INT64_MAX),
    (write_unsigned_varint, read_unsigned_varint, size_of_unsigned_varint, 0, 0xFFFFFFFF),
], ids=["varint", "varlong", "unsigned"])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_round_trip(write, read, size, lo, hi, data):
    value = data.draw(st.integers(min_value=lo, max_value=hi))
    out = bytearray()
    write(value, out)
    assert read(bytes(out), 0) == (value, len(out)) == (value, size(value))


@pytest.mark.parametrize("read,data,message", [
    (read_unsigned_varint, b"\x80\x80\x80\x80\x80\x00", "unsigned varint longer than 5 bytes"),
    (read_varint, b"\x80\x80\x80\x80\x80\x00", "varint longer than 5 bytes"),
    (read_varlong, b"\x80" * 10 + b"\x00", "varlong longer than 10 bytes"),
], ids=["unsigned-6-bytes", "varint-6-bytes", "varlong-11-bytes"])
def test_over_long_encodings_are_refused_even_for_small_values(read, data, message):
    with pytest.raises(VarintError, match=message):
        read(data, 0)
    assert read(data[:-2] + b"\x00", 0)[0] == 0  # one byte shorter is the longest allowed


@pytest.mark.parametrize("read", [read_unsigned_varint, read_varint, read_varlong])
@pytest.mark.parametrize("data,pos", [(b"", 0), (b"\x05", 1), (b"\xff", 0), (b"\x00\x80\x80", 1)],
                         ids=["empty", "at-end", "cut-after-one", "cut-after-two"])
def test_a_varint_cut_off_by_the_end_of_the_buffer_is_refused(read, data, pos):
    with pytest.raises(VarintError, match="runs past the end of the buffer"):
        read(data, pos)


def test_varint_error_is_a_value_error():
    assert issubclass(VarintError, ValueError)


def test_negative_unsigned_varint_is_refused():
    with pytest.raises(ValueError):
        unsigned_varint_bytes(-1)
