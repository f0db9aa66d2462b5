"""The bounded cache of old segments' `.log` files: eviction, reopening, pins, closed segments."""
from __future__ import annotations

import errno
import os

import pytest

from rafka.partition_worker.file_cache import SegmentFileCache
from rafka.partition_worker.record_batch import Record, encode_batch, parse_header
from rafka.partition_worker.segment import LogSegment


def _sealed_segments(tmp_path, cache: SegmentFileCache, count: int) -> list[LogSegment]:
    """`count` sealed segments of one 3-record batch each, bases 0, 3, 6, ..."""
    segments = []
    for i in range(count):
        base = 3 * i
        seg = LogSegment.create(tmp_path, base, index_interval_bytes=1, file_cache=cache)
        data = bytearray(encode_batch([Record(base + j, 1000 + base + j, None, bytes([i]) * 50) for j in range(3)],
                                      base_offset=base))
        seg.append(data, [parse_header(data, 0)])
        seg.seal()
        segments.append(seg)
    return segments


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_reads_beyond_capacity_evict_the_least_recently_used_and_reopen_transparently(tmp_path):
    cache = SegmentFileCache(capacity=2)
    segments = _sealed_segments(tmp_path, cache, 5)
    assert len(cache) == 0  # sealing released the writers; nothing read yet
    for round_ in range(2):
        for i, seg in enumerate(segments):
            regions = seg.read_regions(seg.base_offset, 1 << 20)
            assert len(regions) == 1
            data = seg.read_bytes(regions[0].position, regions[0].length)
            assert data == seg.log_path.read_bytes() and bytes([i]) * 50 in data
            assert len(cache) <= 2
    assert cache.opens == 10 and cache.evictions == 8  # every read of the second round reopened its file
    assert set(segments[-2:]) == {s for s in segments if s in cache}


def test_a_recently_used_file_stays_open(tmp_path):
    cache = SegmentFileCache(capacity=2)
    a, b, c = _sealed_segments(tmp_path, cache, 3)
    a.read_bytes(0, 10)
    b.read_bytes(0, 10)
    a.read_bytes(0, 10)  # a is now the most recent
    c.read_bytes(0, 10)  # evicts b
    assert a in cache and c in cache and b not in cache
    assert cache.opens == 3


def test_recovery_and_truncation_of_an_evicted_segment_reopen_it(tmp_path):
    cache = SegmentFileCache(capacity=1)
    first, second = _sealed_segments(tmp_path, cache, 2)
    size = first.size
    with open(first.log_path, "ab") as f:
        f.write(b"\x00" * 30)
    second.read_bytes(0, 1)
    assert first not in cache
    assert first.recover() == 30 and first.size == size == os.path.getsize(first.log_path)
    assert first.next_offset == 3


def test_a_closed_segment_is_dropped_and_never_reopened(tmp_path):
    cache = SegmentFileCache(capacity=4)
    a, b = _sealed_segments(tmp_path, cache, 2)
    a.read_bytes(0, 10)
    b.read_bytes(0, 10)
    opens = cache.opens
    a.close()
    assert a not in cache and b in cache
    with pytest.raises(OSError) as e:
        a.read_bytes(0, 10)
    assert e.value.errno == errno.EBADF
    with pytest.raises(OSError):
        list(a.iter_headers())
    assert cache.opens == opens and a not in cache
    b.close()
    assert len(cache) == 0


def test_the_active_segment_uses_its_own_file_not_the_cache(tmp_path):
    cache = SegmentFileCache(capacity=1)
    seg = LogSegment.create(tmp_path, 0, index_interval_bytes=1, file_cache=cache)
    data = bytearray(encode_batch([Record(0, 1, None, b"v")]))
    seg.append(data, [parse_header(data, 0)])
    assert seg.read_bytes(0, len(data)) == data
    seg.flush()
    assert len(cache) == 0 and cache.opens == 0
    seg.seal()
    assert seg.read_bytes(0, len(data)) == data and seg in cache
    seg.append(data, [parse_header(data, 0)])  # appending again makes it active: the cached file is dropped
    assert seg not in cache and seg.size == 2 * len(data)
    seg.close()


def test_a_borrowed_file_is_not_closed_by_eviction(tmp_path):
    cache = SegmentFileCache(capacity=1)
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"{i}.log")
        paths[-1].write_bytes(bytes([i]) * 8)
    with cache.borrow("a", paths[0]) as fd_a:
        with cache.borrow("b", paths[1]) as fd_b:
            assert len(cache) == 2  # both pinned: over capacity for now
            assert os.pread(fd_a, 8, 0) == bytes([0]) * 8 and os.pread(fd_b, 8, 0) == bytes([1]) * 8
        assert len(cache) == 1 and "a" in cache and not _is_open(fd_b)
        with cache.borrow("c", paths[2]) as fd_c:
            assert os.pread(fd_a, 8, 0) == bytes([0]) * 8
            cache.drop("a")  # dropped while borrowed: closes when the borrower is done
            assert _is_open(fd_a) and os.pread(fd_c, 8, 0) == bytes([2]) * 8
    assert not _is_open(fd_a) and list(cache._entries) == ["c"]
    cache.close_all()
    assert len(cache) == 0 and not _is_open(fd_c)


def test_configure_shrinks_the_cache(tmp_path):
    cache = SegmentFileCache(capacity=8)
    segments = _sealed_segments(tmp_path, cache, 6)
    for seg in segments:
        seg.read_bytes(0, 1)
    assert len(cache) == 6
    cache.configure(2)
    assert cache.capacity == 2 and len(cache) == 2 and segments[-1] in cache
    with pytest.raises(FileNotFoundError):
        with cache.borrow("missing", tmp_path / "nope.log"):
            pass
    assert "missing" not in cache
