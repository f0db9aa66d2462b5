"""`.index` and `.timeindex`: lookups, file format, sanity checks, truncation."""
from __future__ import annotations

import struct

import pytest

from rafka.partition_worker.index import CorruptIndexError, OffsetIndex, TimeIndex


def test_offset_index_lookup_and_file_format(tmp_path):
    idx = OffsetIndex(tmp_path / "00000000000000000100.index", 100)
    assert idx.lookup(150) == (100, 0)
    for off, pos in [(110, 4000), (130, 9000), (170, 15000)]:
        idx.append(off, pos)
    assert idx.lookup(105) == (100, 0)
    assert idx.lookup(110) == (110, 4000)
    assert idx.lookup(169) == (130, 9000)
    assert idx.lookup(10**9) == (170, 15000)
    assert idx.path.stat().st_size == idx.preallocated_bytes == (10 * 1024 * 1024 // 8) * 8
    idx.close()  # trimmed to its entries
    data = idx.path.read_bytes()
    assert list(struct.iter_unpack(">ii", data)) == [(10, 4000), (30, 9000), (70, 15000)]
    again = OffsetIndex(idx.path, 100)
    again.load()
    assert again.entries() == [(110, 4000), (130, 9000), (170, 15000)]
    with pytest.raises(ValueError):
        again.append(160, 20000)


def test_offset_index_truncate(tmp_path):
    idx = OffsetIndex(tmp_path / "0.index", 0)
    for i in range(1, 6):
        idx.append(i * 10, i * 100)
    idx.truncate_to(30)
    assert idx.entries() == [(10, 100), (20, 200)]
    data = idx.path.read_bytes()  # still preallocated, zeros after the entries
    assert len(data) == idx.preallocated_bytes and data[16:].count(0) == len(data) - 16
    idx.trim_to_valid_size()
    assert idx.path.stat().st_size == 16
    idx.reset()
    assert len(idx) == 0 and not any(idx.path.read_bytes())
    idx.close()
    assert idx.path.stat().st_size == 0


def test_offset_index_sanity_checks(tmp_path):
    path = tmp_path / "0.index"
    path.write_bytes(struct.pack(">ii", 5, 100) + b"\x00\x01")
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0).load()
    path.write_bytes(struct.pack(">iiii", 5, 100, 4, 200))
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0).load()
    path.write_bytes(struct.pack(">ii", 5, 100))
    idx = OffsetIndex(path, 0)
    idx.load()
    idx.sanity_check(101)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check(100)


def test_time_index_appends_only_growing_timestamps(tmp_path):
    ti = TimeIndex(tmp_path / "00000000000000000010.timeindex", 10)
    assert ti.lookup(5) == (-1, 10) and ti.last_entry == (-1, 10)
    assert ti.maybe_append(1000, 12)
    assert not ti.maybe_append(1000, 14)
    assert not ti.maybe_append(900, 15)
    assert ti.maybe_append(2000, 20)
    assert ti.maybe_append(3000, 20)
    assert ti.entries() == [(1000, 12), (2000, 20), (3000, 20)]
    assert ti.lookup(1000) == (-1, 10)     # nothing strictly older than 1000 is indexed
    assert ti.lookup(1001) == (1000, 12)
    assert ti.lookup(2500) == (2000, 20)
    ti.trim_to_valid_size()
    assert list(struct.iter_unpack(">qi", ti.path.read_bytes())) == [(1000, 2), (2000, 10), (3000, 10)]
    ti.truncate_to(20)
    assert ti.entries() == [(1000, 12)]
    assert ti.path.stat().st_size == ti.preallocated_bytes == (10 * 1024 * 1024 // 12) * 12
    ti.close()
    again = TimeIndex(ti.path, 10)
    again.load()
    assert again.entries() == [(1000, 12)]
    with pytest.raises(CorruptIndexError):
        again.sanity_check(12)
