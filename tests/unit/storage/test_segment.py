"""LogSegment on its own: read regions, recovery count, truncation."""
from __future__ import annotations

import os

from rafka.partition_worker.record_batch import Record, encode_batch, parse_header
from rafka.partition_worker.segment import RECENT_BATCHES, FileRegion, LogSegment


def _append(seg: LogSegment, n: int, ts: int) -> None:
    data = bytearray(encode_batch([Record(seg.next_offset + i, ts + i, None, b"x" * 30) for i in range(n)],
                                  base_offset=seg.next_offset))
    seg.append(data, [parse_header(data, 0)])


def test_read_regions_merge_adjacent_batches_and_respect_limits(tmp_path):
    seg = LogSegment.create(tmp_path, 100, index_interval_bytes=50)
    for i in range(6):
        _append(seg, 2, 1000 + i)
    assert seg.next_offset == 112 and seg.max_timestamp == 1006
    size = seg.size // 6
    assert seg.read_regions(100, 10**6) == [FileRegion(str(seg.log_path), 0, seg.size, seg.inode)]
    assert seg.read_regions(105, 2 * size) == [FileRegion(str(seg.log_path), 2 * size, 2 * size, seg.inode)]
    assert seg.read_regions(100, 1) == [FileRegion(str(seg.log_path), 0, size, seg.inode)]
    assert seg.read_regions(100, 10**6, max_offset=104) == [FileRegion(str(seg.log_path), 0, 2 * size, seg.inode)]
    assert seg.read_regions(112, 10**6) == []
    assert len(seg.index) > 0


def test_recover_returns_cut_bytes_and_truncate_to_drops_whole_batches(tmp_path):
    seg = LogSegment.create(tmp_path, 0, index_interval_bytes=1)
    for i in range(5):
        _append(seg, 3, 1000 + 10 * i)
    size, index_entries = seg.size, seg.index.entries()
    with open(seg.log_path, "ab") as f:
        f.write(b"\xff" * 99)
    assert seg.recover() == 99
    assert seg.size == size == os.path.getsize(seg.log_path)
    assert seg.index.entries() == index_entries and seg.next_offset == 15
    removed = seg.truncate_to(6)
    assert removed == size * 3 // 5
    assert seg.next_offset == 6 and seg.max_timestamp == 1012
    assert all(off < 6 for off, _ in seg.index.entries())
    assert all(off < 6 for _, off in seg.time_index.entries())


def test_a_read_at_a_batch_appended_lately_starts_there_and_truncation_forgets_it(tmp_path):
    """A consumer at the end of the log reads the batch just appended: its position is known
    without walking headers from the sparse index; after a truncation (and a new batch at the
    same offsets, another size) the read finds the new one."""
    seg = LogSegment.create(tmp_path, 0, index_interval_bytes=10**6)   # one index entry at most
    for i in range(RECENT_BATCHES + 5):
        _append(seg, 1, 1000 + i)
    size = seg.size // (RECENT_BATCHES + 5)
    last = seg.next_offset - 1
    walked = []
    walk = seg.iter_headers
    seg.iter_headers = lambda start=0, end=None: (walked.append(h) or h for h in walk(start, end))
    before_last = last - 1
    assert seg.read_regions(before_last, 10**6) == [FileRegion(str(seg.log_path), before_last * size, 2 * size,
                                                               seg.inode)]
    assert len(walked) == 2                          # the batches themselves, not the headers before them
    assert seg.read_regions(last, 10**6) == [FileRegion(str(seg.log_path), last * size, size, seg.inode)]
    assert len(walked) == 2                          # the last append: no walk at all
    assert seg.read_regions(2, size)[0].position == 2 * size   # older than the recent ones: found by a walk
    assert len(walked) > 3
    seg.truncate_to(last)
    data = bytearray(encode_batch([Record(last + i, 2000, None, b"y" * 50) for i in range(2)], base_offset=last))
    seg.append(data, [parse_header(data, 0)])
    assert seg.read_regions(last, 10**6) == [FileRegion(str(seg.log_path), last * size, len(data), seg.inode)]


def _walked_read(seg: LogSegment, *args, **kwargs):
    """`seg.read` as it is without the last append kept in memory: the header walk on disk."""
    tail, seg._tail = seg._tail, None
    try:
        return seg.read(*args, **kwargs)
    finally:
        seg._tail = tail


def test_a_read_of_the_last_append_answers_as_the_walk_of_its_headers_does(tmp_path):
    """The last append (one batch or several, as a follower writes them) is answered from memory;
    every offset, byte limit, high watermark and min_one gives what the walk on disk gives, and
    after a truncation or a recovery nothing stale is answered."""
    seg = LogSegment.create(tmp_path, 0, index_interval_bytes=100)
    sizes = []

    def append_batches(counts: list[int]) -> None:
        data = bytearray()
        for n in counts:
            data += encode_batch([Record(seg.next_offset + len(data) + i, 1000, None, b"z" * (10 * n))
                                  for i in range(n)], base_offset=0)
        pos, headers, offset = 0, [], seg.next_offset
        while pos < len(data):   # renumber as the log does, then hand the segment the headers
            h = parse_header(data, pos)
            data[pos:pos + 8] = offset.to_bytes(8, "big")
            headers.append(parse_header(data, pos))
            offset += h.records_count
            pos += h.size
            sizes.append(h.size)
        seg.append(data, headers)

    def same_as_walk() -> int:
        checked = 0
        for offset in range(seg.base_offset, seg.next_offset + 1):
            for max_bytes in (1, sizes[-1], sizes[-1] + 1, 10**6):
                for max_offset in (None, offset, offset + 1, seg.next_offset - 1, seg.next_offset, seg.next_offset + 5):
                    for min_one in (True, False):
                        assert seg.read(offset, max_bytes, max_offset, min_one=min_one) \
                            == _walked_read(seg, offset, max_bytes, max_offset, min_one=min_one)
                        checked += 1
        return checked

    append_batches([1])
    append_batches([2])
    assert same_as_walk()
    assert seg._tail is not None
    append_batches([1, 3, 2])                      # several batches in one append
    assert same_as_walk()
    seg.truncate_to(seg.next_offset - 2)           # cuts into the last append: it is forgotten
    assert seg._tail is None
    assert same_as_walk()
    append_batches([4])
    with open(seg.log_path, "ab") as f:
        f.write(b"\x00" * 7)
    seg.recover()
    assert seg._tail is None and same_as_walk()
