"""Kafka's variable-length integers, the one implementation (Kafka's `ByteUtils`).

- unsigned varint: 7 bits a byte, least significant group first, the high bit set on every
  byte but the last (protobuf's encoding). Kafka reads at most 5 bytes (a uint32): the
  protocol's compact lengths and tagged-field headers (KIP-482).
- varint / varlong: a signed int32 / int64 zigzag-mapped (0, -1, 1, -2, ... -> 0, 1, 2, 3,
  ...) and written as an unsigned varint of at most 5 / 10 bytes: the fields of a v2 record
  (its length, offset delta, key and value lengths, header count are varints; the timestamp
  delta is a varlong).

Writers append to a `bytearray`; readers take a buffer and a position and return (value,
next position). A reader refuses an encoding longer than its type allows, or one cut off by
the end of the buffer, with `VarintError` (a `ValueError`): callers turn it into their own
decode error (ProtocolError, CorruptRecordError, OffsetsRecordError). Writers do not check
ranges: a value outside int32/int64 is the caller's bug.

These run once per record field on the hot path of record encoding and decoding, so each is
one plain function with the one-byte case first (no shared helper calls).
"""
from __future__ import annotations

from typing import Callable, Union

Buffer = Union[bytes, bytearray, memoryview]

_MASK64 = 0xFFFFFFFFFFFFFFFF


class VarintError(ValueError):
    """A varint longer than its type allows, or cut off by the end of the buffer."""


# -- unsigned --------------------------------------------------------------------------

def write_unsigned_varint(value: int, out: bytearray) -> None:
    """Append `value` (>= 0) as an unsigned varint. ValueError when it is negative."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def unsigned_varint_bytes(value: int) -> bytes:
    """`value` (>= 0) as unsigned-varint bytes. ValueError when it is negative."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    write_unsigned_varint(value, out)
    return bytes(out)


def size_of_unsigned_varint(value: int) -> int:
    """Bytes `write_unsigned_varint(value)` appends."""
    n = 1
    while value >= 0x80:
        value >>= 7
        n += 1
    return n


# -- zigzag: varint (int32) and varlong (int64) --------------------------------------------

def write_varlong(value: int, out: bytearray) -> None:
    """Append the zigzag varint of a signed int64 (up to 10 bytes)."""
    v = ((value << 1) ^ (value >> 63)) & _MASK64
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


# For an int32 the 64-bit zigzag gives the same bytes as Kafka's 32-bit one.
write_varint = write_varlong


# -- readers ----------------------------------------------------------------------------

def _reader(name: str, max_bytes: int, zigzag: bool) -> Callable[[Buffer, int], tuple[int, int]]:
    """A reader of one kind of varint: one loop for all three, specialised by closure."""
    max_shift = 7 * (max_bytes - 1)
    too_long = f"{name} longer than {max_bytes} bytes"
    cut = f"{name} runs past the end of the buffer"

    def read(buf: Buffer, pos: int) -> tuple[int, int]:
        try:
            b = buf[pos]
            if b < 0x80:
                return ((b >> 1) ^ -(b & 1) if zigzag else b), pos + 1
            result = b & 0x7F
            shift = 7
            pos += 1
            while True:
                b = buf[pos]
                pos += 1
                result |= (b & 0x7F) << shift
                if b < 0x80:
                    return ((result >> 1) ^ -(result & 1) if zigzag else result), pos
                shift += 7
                if shift > max_shift:
                    raise VarintError(too_long)
        except IndexError:
            raise VarintError(cut) from None

    read.__name__ = read.__qualname__ = f"read_{name.replace(' ', '_')}"
    read.__doc__ = f"The {name} at `pos` -> (value, next position); at most {max_bytes} bytes, as Kafka."
    return read


read_unsigned_varint = _reader("unsigned varint", 5, zigzag=False)
read_varint = _reader("varint", 5, zigzag=True)      # int32
read_varlong = _reader("varlong", 10, zigzag=True)   # int64


def size_of_varlong(value: int) -> int:
    """Bytes `write_varlong(value)` appends."""
    return size_of_unsigned_varint(((value << 1) ^ (value >> 63)) & _MASK64)


size_of_varint = size_of_varlong


__all__ = [
    "VarintError", "read_unsigned_varint", "read_varint", "read_varlong", "size_of_unsigned_varint",
    "size_of_varint", "size_of_varlong", "unsigned_varint_bytes", "write_unsigned_varint", "write_varint",
    "write_varlong",
]
