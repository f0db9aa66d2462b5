"""PartitionLog: appends across rolls, reads, reopen, recovery, timestamps, out-of-range reads."""
from __future__ import annotations

import os
import random

import pytest

from rafka.common.config import LogConfig
from rafka.common.errors import (
    CorruptRecordError, InvalidRecordError, OffsetOutOfRangeError, RecordBatchTooLargeError,
)
from rafka.partition_worker.log import CLEAN_SHUTDOWN_FILE, PartitionLog
from rafka.partition_worker.record_batch import Compression, decode_records, iter_batches
from rafka.partition_worker.record_batch import Record, encode_batch

def batch(n: int = 3, ts: int = 1_000, value_size: int = 40, codec: int = Compression.NONE,
          key_prefix: str = "k") -> bytearray:
    """A produce-style batch of `n` records (offsets 0..n-1, timestamps ts..ts+n-1)."""
    records = [Record(i, ts + i, f"{key_prefix}{i}".encode(), bytes([i % 251]) * value_size) for i in range(n)]
    return bytearray(encode_batch(records, compression=codec))


SMALL = LogConfig(segment_bytes=1024, index_interval_bytes=128)
MAX = 1 << 20


def records_of(log: PartitionLog, start: int = 0) -> list:
    """Every record from `start` to the log end, read through `read`."""
    out, offset = [], start
    while offset < log.log_end_offset:
        result = log.read(offset, 4096)
        assert result.regions, offset
        for region in result.regions:
            data = log.read_bytes(region)
            for h in iter_batches(data):
                out.extend(decode_records(data, h.position)[1])
        offset = result.next_offset
    return out


def fill(log: PartitionLog, batches: int, n: int = 3, ts: int = 1_000) -> list[int]:
    bases = []
    for i in range(batches):
        info = log.append(batch(n, ts=ts + 10 * i, codec=Compression(i % 5)), leader_epoch=2, max_batch_bytes=MAX)
        bases.append(info.base_offset)
    return bases


def test_append_assigns_offsets_and_rolls_segments(tmp_path):
    log = PartitionLog.open(tmp_path / "orders-0", SMALL)
    bases = fill(log, 40)
    assert bases == list(range(0, 120, 3))
    assert log.log_end_offset == 120 and log.log_start_offset == 0
    segments = log.segments
    assert len(segments) > 3
    assert all(s.size <= SMALL.segment_bytes for s in segments)
    assert [s.base_offset for s in segments] == sorted({s.base_offset for s in segments})
    names = sorted(p.name for p in (tmp_path / "orders-0").iterdir())
    assert "00000000000000000000.log" in names and "00000000000000000000.index" in names
    assert f"{segments[1].base_offset:020d}.timeindex" in names
    recs = records_of(log)
    assert [r.offset for r in recs] == list(range(120))
    assert recs[5].key == b"k2"


def test_committed_end_is_a_segments_size_once_all_its_batches_are_below_the_high_watermark(tmp_path):
    log = PartitionLog.open(tmp_path / "orders-0", SMALL)
    fill(log, 12)
    first, *_, active = log.segments
    assert log.committed_end(str(first.log_path), active.base_offset) == first.size
    assert log.committed_end(str(active.log_path), log.log_end_offset) == active.size
    assert log.committed_end(str(active.log_path), log.log_end_offset - 1) == -1  # its last batch is not
    assert log.committed_end(str(tmp_path / "elsewhere.log"), log.log_end_offset) == -1


def test_append_info(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", SMALL)
    log.append(batch(2), leader_epoch=0, max_batch_bytes=MAX)
    info = log.append(bytes(batch(4, ts=5000)) + bytes(batch(1, ts=7000)), leader_epoch=9, max_batch_bytes=MAX,
                      from_client=False)
    assert (info.base_offset, info.last_offset, info.batch_count, info.record_count) == (2, 6, 2, 5)
    assert info.max_timestamp == 7000 and info.log_append_time_ms == -1 and info.log_start_offset == 0
    data = log.read_bytes(log.read(2, MAX).regions[0])
    h1, h2 = iter_batches(data)
    assert (h1.base_offset, h1.partition_leader_epoch, h2.base_offset) == (2, 9, 6)


def test_client_append_of_two_batches_is_refused_as_kafka_does(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", SMALL)
    with pytest.raises(InvalidRecordError, match="exactly one record batch"):
        log.append(bytes(batch(2)) + bytes(batch(1)), leader_epoch=0, max_batch_bytes=MAX)
    assert log.log_end_offset == 0 and log.segments[0].size == 0


def test_append_refusal_writes_nothing(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", SMALL)
    good, bad = batch(2), batch(2)
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        log.append(bytes(good) + bytes(bad), leader_epoch=0, max_batch_bytes=MAX)
    assert log.log_end_offset == 0 and log.segments[0].size == 0
    with pytest.raises(RecordBatchTooLargeError):
        log.append(batch(40, value_size=100), leader_epoch=0, max_batch_bytes=MAX)


def test_batch_larger_than_free_space_goes_to_a_new_segment_but_never_rolls_empty(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", SMALL)
    big = batch(8, value_size=100)
    assert 600 < len(big) <= 1024
    log.append(big, leader_epoch=0, max_batch_bytes=MAX)
    log.append(batch(8, value_size=100), leader_epoch=0, max_batch_bytes=MAX)
    assert [s.base_offset for s in log.segments] == [0, 8]


def test_read_honours_max_bytes_min_one_and_max_offset(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=1 << 20, index_interval_bytes=100))
    sizes = []
    for _ in range(10):
        b = batch(3)
        sizes.append(len(b))
        log.append(b, leader_epoch=0, max_batch_bytes=MAX)
    size = sizes[0]
    whole = log.read(0, 10**6)
    assert len(whole.regions) == 1 and whole.size == 10 * size and whole.next_offset == 30
    two = log.read(0, 2 * size + size // 2)
    assert two.size == 2 * size and two.next_offset == 6
    one = log.read(0, 1)  # smaller than any batch: still one whole batch
    assert one.size == size and one.next_offset == 3
    assert log.read(0, 1, min_one=False).regions == ()
    mid = log.read(4, 10**6)  # from the middle of a batch: that whole batch
    assert mid.regions[0].position == size and mid.next_offset == 30
    capped = log.read(0, 10**6, max_offset=7)  # base offsets 0, 3, 6 are below 7
    assert capped.size == 3 * size and capped.next_offset == 9
    assert log.read(6, 10**6, max_offset=6).regions == ()
    end = log.read(30, 10**6)
    assert end.regions == () and end.next_offset == 30


def test_read_spans_segments_and_regions_are_whole_batches(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", SMALL)
    fill(log, 30)
    result = log.read(0, 3000)
    assert 1 < len(result.regions) and result.size <= 3000
    assert len({r.path for r in result.regions}) == len(result.regions)
    for region in result.regions:
        data = log.read_bytes(region)
        assert sum(h.size for h in iter_batches(data)) == region.length
    assert records_of(log, result.next_offset)[0].offset == result.next_offset


def test_out_of_range_reads_raise(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", SMALL)
    fill(log, 2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(7, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


def test_reopen_after_close_keeps_everything(tmp_path):
    path = tmp_path / "t-0"
    log = PartitionLog.open(path, SMALL)
    fill(log, 25)
    before = records_of(log)
    log.close()
    index_bytes = {s.index.path.name: s.index.path.read_bytes() for s in log.segments}
    assert (path / CLEAN_SHUTDOWN_FILE).exists()
    log = PartitionLog.open(path, SMALL)
    assert not (path / CLEAN_SHUTDOWN_FILE).exists()
    assert log.log_end_offset == 75 and records_of(log) == before
    assert {s.index.path.name: s.index.path.read_bytes() for s in log.segments} == index_bytes
    assert log.append(batch(2), leader_epoch=3, max_batch_bytes=MAX).base_offset == 75
    assert [r.offset for r in records_of(log)] == list(range(77))


def _crash(log: PartitionLog) -> None:
    """Stop without close(): no clean-shutdown marker."""
    for s in log.segments:
        s.close()


def test_recovery_truncates_torn_tail_and_appends_continue(tmp_path):
    path = tmp_path / "t-0"
    log = PartitionLog.open(path, SMALL)
    fill(log, 20)
    active = log.segments[-1]
    last_size = list(active.iter_headers())[-1].size
    full = active.size
    keep = full - last_size // 2  # cut the last batch in half
    _crash(log)
    os.truncate(active.log_path, keep)
    log = PartitionLog.open(path, SMALL)
    assert log.log_end_offset == 57
    assert log.segments[-1].size == full - last_size == os.path.getsize(active.log_path)
    assert log.append(batch(3), leader_epoch=1, max_batch_bytes=MAX).base_offset == 57
    assert [r.offset for r in records_of(log)] == list(range(60))


@pytest.mark.parametrize("garbage", [b"\x00" * 100, bytes(range(200)), b"\x01" * 7], ids=["zeros", "bytes", "short"])
def test_recovery_truncates_appended_garbage(tmp_path, garbage):
    path = tmp_path / "t-0"
    log = PartitionLog.open(path, SMALL)
    fill(log, 10)
    end, size = log.log_end_offset, log.segments[-1].size
    active_path = log.segments[-1].log_path
    _crash(log)
    with open(active_path, "ab") as f:
        f.write(garbage)
    log = PartitionLog.open(path, SMALL)
    assert log.log_end_offset == end and log.segments[-1].size == size
    assert os.path.getsize(active_path) == size
    assert log.append(batch(1), leader_epoch=1, max_batch_bytes=MAX).base_offset == end


def test_recovery_truncates_at_first_bad_crc(tmp_path):
    path = tmp_path / "t-0"
    log = PartitionLog.open(path, LogConfig(segment_bytes=1 << 20, index_interval_bytes=64))
    fill(log, 10)
    seg = log.segments[-1]
    third = list(seg.iter_headers())[2]
    _crash(log)
    with open(seg.log_path, "r+b") as f:
        f.seek(third.position + 70)
        byte = f.read(1)
        f.seek(third.position + 70)
        f.write(bytes([byte[0] ^ 0xFF]))
    log = PartitionLog.open(path, LogConfig(segment_bytes=1 << 20, index_interval_bytes=64))
    assert log.log_end_offset == third.base_offset == 6
    assert all(off < 6 for off, _ in log.segments[-1].index.entries())
    assert log.append(batch(2), leader_epoch=1, max_batch_bytes=MAX).base_offset == 6


def test_missing_index_is_rebuilt_identically(tmp_path):
    path = tmp_path / "t-0"
    log = PartitionLog.open(path, SMALL)
    fill(log, 30)
    first = log.segments[0]
    active = log.segments[-1]
    originals = {p: p.read_bytes() for p in (first.index.path, first.time_index.path, active.index.path)}
    assert originals[first.index.path]  # the test means something only with entries
    log.close()
    first.index.path.unlink()
    first.time_index.path.unlink()
    active.index.path.unlink()
    log = PartitionLog.open(path, SMALL)  # clean shutdown, but indexes missing: rebuilt
    for p, data in originals.items():
        assert p.read_bytes() == data, p.name
    assert log.log_end_offset == 90 and [r.offset for r in records_of(log)] == list(range(90))
    assert log.append(batch(1), leader_epoch=1, max_batch_bytes=MAX).base_offset == 90


def test_index_pointing_past_log_is_rebuilt(tmp_path):
    path = tmp_path / "t-0"
    log = PartitionLog.open(path, SMALL)
    fill(log, 30)
    first = log.segments[0]
    log.close()
    with open(first.index.path, "ab") as f:
        f.write((10_000).to_bytes(4, "big") + (1 << 30).to_bytes(4, "big"))
    log = PartitionLog.open(path, SMALL)
    assert all(pos < first.size for _, pos in log.segments[0].index.entries())
    assert [r.offset for r in records_of(log)] == list(range(90))


def test_crash_cut_to_flushed_bytes_recovers(tmp_path):
    path = tmp_path / "t-0"
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=128, flush_messages=9)
    log = PartitionLog.open(path, config)
    fill(log, 4)  # 12 messages: flushed after the third batch
    assert log.recovery_point == 9
    flushed = log.flushed_bytes()
    _crash(log)
    for p, size in flushed.items():
        os.truncate(p, size)
    log = PartitionLog.open(path, config)
    assert log.log_end_offset == 9


def test_random_garbage_recovery_fuzz(tmp_path):
    rng = random.Random(7)
    for trial in range(15):
        path = tmp_path / f"t-{trial}"
        log = PartitionLog.open(path, SMALL)
        fill(log, rng.randint(1, 12))
        active = log.segments[-1]
        valid_ends = {active.base_offset: 0}
        for h in active.iter_headers():
            valid_ends[h.next_offset] = h.position + h.size
        _crash(log)
        cut = rng.randint(0, active.size)
        with open(active.log_path, "r+b") as f:
            f.truncate(cut)
            f.seek(cut)
            f.write(rng.randbytes(rng.randint(0, 300)))
        log = PartitionLog.open(path, SMALL)
        end = log.log_end_offset
        assert valid_ends[end] == log.segments[-1].size <= cut
        assert log.append(batch(1), leader_epoch=0, max_batch_bytes=MAX).base_offset == end


def test_offset_for_timestamp(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", SMALL)
    assert log.offset_for_timestamp(0) is None
    fill(log, 30, n=3, ts=1_000)  # batch i: offsets 3i..3i+2, timestamps 1000+10i .. +2
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(1_001) == (1, 1001)
    assert log.offset_for_timestamp(1_003) == (3, 1010)
    assert log.offset_for_timestamp(1_000 + 10 * 25 + 2) == (77, 1252)
    assert log.offset_for_timestamp(1_000 + 10 * 29 + 3) is None
    assert log.max_timestamp_offset() == (89, 1292)
    log.close()
    log = PartitionLog.open(tmp_path / "t-0", SMALL)
    assert log.offset_for_timestamp(1_151) == (46, 1151)
    assert log.offset_for_timestamp(1_153) == (48, 1160)
    assert log.max_timestamp_offset() == (89, 1292)


def test_offset_for_timestamp_with_out_of_order_timestamps(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(index_interval_bytes=1))
    for ts in (5_000, 1_000, 9_000, 2_000):
        log.append(batch(1, ts=ts), leader_epoch=0, max_batch_bytes=MAX)
    assert log.offset_for_timestamp(1_500) == (0, 5_000)
    assert log.offset_for_timestamp(6_000) == (2, 9_000)
    assert log.offset_for_timestamp(9_001) is None
