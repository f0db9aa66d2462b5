"""Splitting byte streams into frames, pairing responses with requests, the golden file format."""
from __future__ import annotations

import io
import struct

import pytest

from rafka.net.protocol.frame_log import (
    Exchange, FrameSplitter, RequestMatcher, read_exchanges, request_header, write_exchanges,
)


def _request(key: int, version: int, correlation_id: int, tail: bytes = b"\x00\x02id") -> bytes:
    return struct.pack(">hhi", key, version, correlation_id) + tail


def _framed(frame: bytes) -> bytes:
    return struct.pack(">i", len(frame)) + frame


def test_splitter_finds_frames_across_any_chunking():
    frames = [_request(3, 12, i, b"x" * i) for i in range(5)]
    stream = b"".join(_framed(f) for f in frames)
    for chunk in (1, 3, 7, len(stream)):
        splitter = FrameSplitter()
        got = []
        for i in range(0, len(stream), chunk):
            got += splitter.feed(stream[i:i + chunk])
        assert got == frames and splitter.pending_bytes == 0, chunk


def test_splitter_holds_an_incomplete_frame_and_refuses_a_negative_size():
    splitter = FrameSplitter()
    assert splitter.feed(_framed(b"abcdef")[:7]) == [] and splitter.pending_bytes == 7
    with pytest.raises(ValueError):
        FrameSplitter().feed(struct.pack(">i", -5))


def test_matcher_pairs_by_correlation_id_and_keeps_unanswered_requests():
    matcher = RequestMatcher()
    assert matcher.request(_request(0, 9, 1)) == (0, 9, 1)   # acks=0: never answered
    matcher.request(_request(3, 12, 2))
    answer = struct.pack(">i", 2) + b"\x00body"
    assert matcher.response(answer) == Exchange(3, 12, _request(3, 12, 2), answer)
    assert matcher.response(struct.pack(">i", 99)) is None
    assert matcher.unanswered() == [Exchange(0, 9, _request(0, 9, 1), None)]
    assert matcher.unanswered() == []


def test_exchanges_survive_the_file_format(tmp_path):
    exchanges = [Exchange(18, 3, _request(18, 3, 7), b"\x00\x00\x00\x07rest"), Exchange(0, 9, _request(0, 9, 8), None)]
    path = tmp_path / "frames.bin"
    with path.open("wb") as f:
        assert write_exchanges(f, exchanges) == 2
    assert list(read_exchanges(path)) == exchanges
    assert [e.correlation_id for e in exchanges] == [7, 8]


def test_a_damaged_file_is_refused(tmp_path):
    buf = io.BytesIO()
    write_exchanges(buf, [Exchange(18, 3, _request(18, 3, 7), b"\x00\x00\x00\x07")])
    path = tmp_path / "frames.bin"
    path.write_bytes(buf.getvalue()[:-2])
    with pytest.raises(ValueError):
        list(read_exchanges(path))
    with pytest.raises(ValueError):
        request_header(b"\x00\x01")
