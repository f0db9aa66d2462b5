"""Kafka's index preallocation: an active segment's `.index`/`.timeindex` are sized to
segment.index.bytes, trimmed to their entries on roll and close, and read back correctly after
an unclean stop that left them preallocated (by the log, a segment and `rafka dump-log`)."""
from __future__ import annotations

import shutil

from rafka.common.config import LogConfig
from rafka.partition_worker.log import CLEAN_SHUTDOWN_FILE, PartitionLog
from rafka.partition_worker.log_dump import dump_file
from rafka.partition_worker.record_batch import Record, decode_records, encode_batch, iter_batches
from rafka.partition_worker.segment import LogSegment

MAX = 1 << 20
INDEX_BYTES = 4096 + 5  # rounded down: 512 offset entries (4096 B), 341 time entries (4092 B)


def _append(log: PartitionLog, count: int, n: int = 3) -> None:
    for _ in range(count):
        end = log.log_end_offset
        data = bytearray(encode_batch([Record(i, 1_000 + end + i, b"k", b"v" * 40) for i in range(n)]))
        log.append(data, leader_epoch=0, max_batch_bytes=MAX)


def read_offsets(log: PartitionLog, max_bytes: int = 4096) -> list[int]:
    """Every record offset from the log start to the log end, read through `read` (`max_bytes` each)."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        result = log.read(offset, max_bytes)
        for region in result.regions:
            data = log.read_bytes(region)
            for h in iter_batches(data):
                out.extend(r.offset for r in decode_records(data, h.position)[1])
        offset = result.next_offset
    return out


def _file_sizes(seg: LogSegment) -> tuple[int, int]:
    return seg.index.path.stat().st_size, seg.time_index.path.stat().st_size


def test_active_indexes_are_preallocated_and_trimmed_on_roll_and_close(tmp_path):
    config = LogConfig(segment_bytes=1024, index_interval_bytes=128, segment_index_bytes=INDEX_BYTES)
    log = PartitionLog.open(tmp_path / "t-0", config)
    assert _file_sizes(log.segments[-1]) == (4096, 4092)  # a new log's first segment is active at once
    _append(log, 30)
    *old, active = log.segments
    assert len(old) >= 3
    for seg in old:
        assert len(seg.index) and _file_sizes(seg) == (8 * len(seg.index), 12 * len(seg.time_index))
    assert _file_sizes(active) == (4096, 4092)
    assert active.index.max_entries == 512 and active.time_index.max_entries == 341
    entries = active.index.entries(), active.time_index.entries()
    log.close()
    assert _file_sizes(active) == (8 * len(entries[0]), 12 * len(entries[1]))

    log = PartitionLog.open(tmp_path / "t-0", config)
    active = log.segments[-1]
    assert (active.index.entries(), active.time_index.entries()) == entries
    _append(log, 1)  # appending re-activates it: preallocated again, entries kept
    assert _file_sizes(active) == (4096, 4092) and active.index.entries()[:len(entries[0])] == entries[0]
    assert read_offsets(log) == list(range(log.log_end_offset))


def test_a_full_index_rolls_at_its_preallocated_size(tmp_path):
    # 31 bytes: 3 offset entries (24 B), 2 time entries (24 B); one entry per batch after the first.
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=1, segment_index_bytes=31)
    log = PartitionLog.open(tmp_path / "t-0", config)
    _append(log, 12, n=1)
    *old, active = log.segments
    assert [s.base_offset for s in log.segments] == [0, 3, 6, 9]
    for seg in old:
        assert seg.index_is_full and len(seg.time_index) == 2
        assert _file_sizes(seg) == (16, 24)
    assert _file_sizes(active) == (24, 24)
    assert read_offsets(log) == list(range(12))


def _crash_image(log: PartitionLog, target):
    """The partition directory as a crash would leave it: files copied while still open."""
    shutil.copytree(log.directory, target)
    assert not (target / CLEAN_SHUTDOWN_FILE).exists()
    return target


def test_unclean_stop_with_preallocated_indexes_keeps_every_entry(tmp_path):
    config = LogConfig(segment_bytes=4096, index_interval_bytes=64)
    log = PartitionLog.open(tmp_path / "t-0", config)
    _append(log, 45)
    active = log.segments[-1]
    expected = active.index.entries(), active.time_index.entries()
    assert len(expected[0]) >= 3
    image = _crash_image(log, tmp_path / "crash-0")
    spare = _crash_image(log, tmp_path / "spare-0")
    name = active.index.path.name
    assert (image / name).stat().st_size == config.segment_index_bytes  # the zero tail is there
    end = log.log_end_offset
    log.close()

    # A segment loaded without recovery (past a recovery point) ends its entries at the zero tail.
    seg = LogSegment.open(spare, active.base_offset, index_interval_bytes=64,
                          max_index_entries=config.segment_index_bytes // 8)
    assert seg.recovered_bytes is None and seg.next_offset == end
    assert (seg.index.entries(), seg.time_index.entries()) == expected
    seg.close()

    # The log recovers its active segment after the unclean stop: the same entries, the same records.
    reopened = PartitionLog.open(image, config)
    active = reopened.segments[-1]
    assert (active.index.entries(), active.time_index.entries()) == expected
    assert reopened.log_end_offset == end and read_offsets(reopened) == list(range(end))
    _append(reopened, 1)
    reopened.close()
    assert active.index.path.stat().st_size == 8 * len(active.index)


def test_unclean_stop_right_after_a_roll_leaves_an_all_zero_index(tmp_path):
    config = LogConfig(segment_bytes=1024, index_interval_bytes=128)
    log = PartitionLog.open(tmp_path / "t-0", config)
    _append(log, 12)
    segments = len(log.segments)
    while len(log.segments) == segments:
        _append(log, 1)  # the new active segment has one batch and no index entry
    active = log.segments[-1]
    assert len(active.index) == 0 and len(active.time_index) == 0
    image = _crash_image(log, tmp_path / "crash-0")
    log.close()
    assert not any((image / active.index.path.name).read_bytes())
    seg = LogSegment.open(image, active.base_offset, index_interval_bytes=128)
    assert len(seg.index) == 0 and len(seg.time_index) == 0
    assert seg.next_offset == active.next_offset and seg.max_timestamp == active.max_timestamp
    seg.close()


def test_dump_log_reads_preallocated_index_files(tmp_path):
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=128)
    log = PartitionLog.open(tmp_path / "t-0", config)
    _append(log, 20)
    active = log.segments[-1]
    assert active.index.path.stat().st_size == config.segment_index_bytes
    index_lines = [line for line in dump_file(active.index.path)]
    time_lines = [line for line in dump_file(active.time_index.path)]
    assert not any(line.failed for line in index_lines + time_lines)
    assert [line.text for line in index_lines[1:]] == [f"offset: {o} position: {p}" for o, p in active.index.entries()]
    assert [line.text for line in time_lines[1:]] == [
        f"timestamp: {t} offset: {o}" for t, o in active.time_index.entries()]
    log.close()
