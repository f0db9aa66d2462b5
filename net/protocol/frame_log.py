"""Recorded Kafka exchanges: splitting TCP byte streams into frames, pairing each request with
its response, and the golden-frame file that stores the pairs.

`tools/record_frames.py` (a recording proxy) writes these files from real clients talking to a
real broker; the protocol tests decode and re-encode every pair, and the fuzzers mutate them.
Pure: no sockets, no asyncio.

File format (`frames.bin`), a sequence of entries, big-endian like Kafka itself:

    int16 api_key, int16 api_version,
    int32 request length, request frame (the request WITHOUT its int32 size prefix),
    int32 response length (-1: no response, e.g. Produce with acks=0), response frame

so a file is read without any protocol table, and a damaged file fails with ValueError.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

__all__ = ["Exchange", "FrameSplitter", "RequestMatcher", "write_exchanges", "read_exchanges",
           "request_header"]

_ENTRY = struct.Struct(">hhi")
_I32 = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id at the start of a request


@dataclass(frozen=True)
class Exchange:
    """One request and the broker's response to it (None when none came)."""

    api_key: int
    api_version: int
    request: bytes
    response: bytes | None

    @property
    def correlation_id(self) -> int:
        return _I32.unpack_from(self.request, 4)[0]


def request_header(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a request frame; ValueError if too short."""
    if len(frame) < _HEADER.size:
        raise ValueError(f"a request frame of {len(frame)} bytes has no header")
    return _HEADER.unpack_from(frame, 0)


class FrameSplitter:
    """Cuts one direction of a Kafka connection into frames, whatever the TCP chunking.

    `feed(data)` returns the frames completed by `data` (size prefixes removed). A negative
    size raises ValueError: the stream is not Kafka and cannot be followed any further.
    """

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        frames = []
        pos = 0
        while len(self._buf) - pos >= 4:
            size, = _I32.unpack_from(self._buf, pos)
            if size < 0:
                raise ValueError(f"negative frame size {size}")
            if len(self._buf) - pos - 4 < size:
                break
            frames.append(bytes(self._buf[pos + 4:pos + 4 + size]))
            pos += 4 + size
        del self._buf[:pos]
        return frames

    @property
    def pending_bytes(self) -> int:
        """Bytes of an incomplete frame held back."""
        return len(self._buf)


class RequestMatcher:
    """Pairs the responses of one connection with its requests by correlation id.

    Kafka answers a connection's requests in order, except that a Produce with acks=0 gets no
    answer; matching by correlation id, rather than by position, handles both. Requests still
    unanswered when the connection ends come out of `unanswered()` with `response=None`.
    """

    def __init__(self) -> None:
        self._pending: dict[int, tuple[int, int, bytes]] = {}

    def request(self, frame: bytes) -> tuple[int, int, int]:
        """Note a request; returns its (api_key, api_version, correlation_id)."""
        key, version, correlation_id = request_header(frame)
        self._pending[correlation_id] = (key, version, frame)
        return key, version, correlation_id

    def response(self, frame: bytes) -> Exchange | None:
        """The exchange a response completes, or None if no request has its correlation id."""
        if len(frame) < 4:
            return None
        correlation_id, = _I32.unpack_from(frame, 0)
        found = self._pending.pop(correlation_id, None)
        if found is None:
            return None
        key, version, request = found
        return Exchange(key, version, request, frame)

    def unanswered(self) -> list[Exchange]:
        """Every request without a response so far (in the order they were sent); forgets them."""
        left = [Exchange(k, v, r, None) for k, v, r in self._pending.values()]
        self._pending.clear()
        return left


def write_exchanges(out: BinaryIO, exchanges: Iterable[Exchange]) -> int:
    """Append exchanges to an open binary file; returns how many were written."""
    n = 0
    for e in exchanges:
        out.write(_ENTRY.pack(e.api_key, e.api_version, len(e.request)))
        out.write(e.request)
        if e.response is None:
            out.write(_I32.pack(-1))
        else:
            out.write(_I32.pack(len(e.response)))
            out.write(e.response)
        n += 1
    return n


def read_exchanges(path: str | Path) -> Iterator[Exchange]:
    """Every exchange of a `frames.bin` file, in file order; ValueError on a damaged file."""
    data = Path(path).read_bytes()
    pos = 0
    while pos < len(data):
        if len(data) - pos < _ENTRY.size:
            raise ValueError(f"{path}: truncated entry at byte {pos}")
        key, version, n = _ENTRY.unpack_from(data, pos)
        pos += _ENTRY.size
        if n < 0 or pos + n + 4 > len(data):
            raise ValueError(f"{path}: bad request length {n} at byte {pos}")
        request = data[pos:pos + n]
        pos += n
        m, = _I32.unpack_from(data, pos)
        pos += 4
        if m < -1 or pos + max(m, 0) > len(data):
            raise ValueError(f"{path}: bad response length {m} at byte {pos}")
        response = None if m == -1 else data[pos:pos + m]
        pos += max(m, 0)
        yield Exchange(key, version, request, response)
