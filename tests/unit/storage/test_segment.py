"""LogSegment on its own: read regions, recovery count, truncation."""
from __future__ import annotations

import os

from rafka.partition_worker.record_batch import Record, encode_batch, parse_header
from rafka.partition_worker.segment import FileRegion, LogSegment


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
