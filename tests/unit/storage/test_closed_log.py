"""ClosedLog: a cleanly closed log read without its replica (a dormant partition), checked
against the records written, not against the replica's own reads."""
from __future__ import annotations

import os

import pytest

from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode
from rafka.partition_worker.checkpoints import EpochEntry, LeaderEpochCache
from rafka.partition_worker.closed_log import ClosedLogError, ClosedLogReader, read_closed_log
from rafka.partition_worker.log import CLEAN_SHUTDOWN_FILE, PartitionLog
from rafka.partition_worker.messages import FetchIsolation
from rafka.partition_worker.record_batch import Record, decode_records, encode_batch, iter_batches
from rafka.partition_worker.segment_files import read_region

SMALL = LogConfig(segment_bytes=1024, index_interval_bytes=128)
MAX = 1 << 20


def batch(n: int = 3) -> bytearray:
    return bytearray(encode_batch([Record(i, 1_000 + i, f"k{i}".encode(), b"v" * 40) for i in range(n)]))


def write_log(directory, batches: int) -> int:
    """A log of `batches` batches of 3 records over several segments, closed cleanly; its end."""
    log = PartitionLog.open(directory, SMALL)
    for _ in range(batches):
        log.append(batch(), leader_epoch=4, max_batch_bytes=MAX)
    end = log.log_end_offset
    log.close()
    return end


def offsets_in(result) -> list[int]:
    out = []
    for r in result.regions:
        data = read_region(r.path, r.position, r.length, r.inode)
        for h in iter_batches(data):
            out.extend(rec.offset for rec in decode_records(data, h.position)[1])
    return out


def test_a_closed_log_serves_every_record_in_order_across_segments(tmp_path):
    end = write_log(tmp_path, 40)   # 120 records; ~10 segments of 1 KiB
    closed = read_closed_log(tmp_path)
    assert closed is not None and len(closed.bases) > 3
    reader = ClosedLogReader(closed)
    assert (closed.log_start_offset, closed.log_end_offset, closed.high_watermark) == (0, end, end)
    seen, offset = [], 0
    while offset < end:
        result = reader.read(offset, 300)
        assert result.error is ErrorCode.NONE and result.regions, offset
        got = offsets_in(result)
        assert got[0] <= offset <= got[-1] and result.next_offset == got[-1] + 1
        assert result.size <= 300 or len(result.regions) == 1   # the first batch whole, whatever its size
        seen.extend(o for o in got if o >= offset)
        offset = result.next_offset
    assert seen == list(range(end))
    assert reader.read(end, 300).regions == ()
    assert reader.read(end + 1, 300).error is ErrorCode.OFFSET_OUT_OF_RANGE
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()   # a reader leaves the log as closed
    reader.close()


def test_a_read_mid_batch_starts_with_the_batch_holding_the_offset(tmp_path):
    write_log(tmp_path, 5)
    closed = read_closed_log(tmp_path)
    assert offsets_in(ClosedLogReader(closed).read(7, MAX))[:3] == [6, 7, 8]


def test_reads_stop_at_the_high_watermark_unless_up_to_the_log_end(tmp_path):
    end = write_log(tmp_path, 4)   # 12 records
    closed = read_closed_log(tmp_path, high_watermark=6)
    assert closed.high_watermark == 6
    assert offsets_in(ClosedLogReader(closed).read(0, MAX)) == list(range(6))
    assert ClosedLogReader(closed).read(6, MAX).regions == ()
    assert offsets_in(ClosedLogReader(closed).read(6, MAX, isolation=FetchIsolation.LOG_END)) == list(range(6, end))


def test_the_checkpointed_log_start_bounds_reads(tmp_path):
    write_log(tmp_path, 4)
    closed = read_closed_log(tmp_path, log_start_offset=5)
    assert closed.log_start_offset == 5
    result = ClosedLogReader(closed).read(2, MAX)
    assert result.error is ErrorCode.OFFSET_OUT_OF_RANGE and result.log_start_offset == 5


def test_a_new_partition_without_segments_is_an_empty_closed_log(tmp_path):
    closed = read_closed_log(tmp_path / "new-0")
    assert (closed.log_start_offset, closed.log_end_offset, closed.size_bytes) == (0, 0, 0)
    assert ClosedLogReader(closed).read(0, MAX).error is ErrorCode.NONE
    assert ClosedLogReader(closed).read(1, MAX).error is ErrorCode.OFFSET_OUT_OF_RANGE


def test_logs_not_closed_cleanly_are_left_to_the_replica(tmp_path):
    write_log(tmp_path, 4)
    (tmp_path / CLEAN_SHUTDOWN_FILE).unlink()
    assert read_closed_log(tmp_path) is None                      # recovery must scan it
    (tmp_path / CLEAN_SHUTDOWN_FILE).touch()
    (tmp_path / "00000000000000000003.log.cleaned").touch()
    assert read_closed_log(tmp_path) is None                      # a cleaner swap cut short


def test_a_broken_index_is_an_error_for_the_reader_not_a_rewrite(tmp_path):
    write_log(tmp_path, 40)
    closed = read_closed_log(tmp_path)
    first_index = tmp_path / f"{closed.bases[0]:020d}.index"
    before = first_index.read_bytes()
    with open(first_index, "ab") as f:
        f.write(b"\x01\x02\x03")                                  # not a multiple of an entry
    with pytest.raises(ClosedLogError):
        ClosedLogReader(closed).read(0, MAX)
    assert first_index.read_bytes() == before + b"\x01\x02\x03"   # left for the replica's recovery


def test_leader_epochs_answer_offset_for_leader_epoch(tmp_path):
    end = write_log(tmp_path, 4)
    cache = LeaderEpochCache(tmp_path)
    cache.assign(2, 0)
    cache.assign(4, 6)
    closed = read_closed_log(tmp_path)
    assert closed.leader_epochs == (EpochEntry(2, 0), EpochEntry(4, 6)) and closed.latest_epoch == 4
    assert closed.end_offset_for(4) == (4, end)
    assert closed.end_offset_for(3) == (2, 6)
    assert closed.end_offset_for(7) == (-1, -1)


def test_the_size_is_the_sum_of_the_segment_files(tmp_path):
    write_log(tmp_path, 10)
    closed = read_closed_log(tmp_path)
    assert closed.size_bytes == sum(os.path.getsize(tmp_path / n) for n in os.listdir(tmp_path) if n.endswith(".log"))


def test_upkeep_wakes_a_closed_log_only_for_what_its_replica_would_do(tmp_path):
    from rafka.partition_worker.closed_log import upkeep_due

    write_log(tmp_path, 40)   # record timestamps ~1,000 ms after the epoch: long past any retention.ms
    closed = read_closed_log(tmp_path)
    keep_all = LogConfig(retention_ms=-1, retention_bytes=-1)
    assert upkeep_due(closed, keep_all, None, now_ms=2_000_000_000_000) is None
    assert "retention time" in upkeep_due(closed, LogConfig(retention_ms=60_000, retention_bytes=-1), None,
                                          now_ms=2_000_000_000_000)
    assert "retention size" in upkeep_due(closed, LogConfig(retention_ms=-1, retention_bytes=2048), None, 0)
    deleted_records = read_closed_log(tmp_path, log_start_offset=closed.bases[2])
    assert "log start offset" in upkeep_due(deleted_records, keep_all, None, 0)
    compacted = LogConfig(cleanup_policy=("compact",), retention_ms=-1, retention_bytes=-1)
    assert "dirty ratio" in upkeep_due(closed, compacted, None, 0)                         # never cleaned
    assert upkeep_due(closed, compacted, closed.bases[-1], 0) is None                      # cleaned up to the active one
    assert upkeep_due(read_closed_log(tmp_path / "empty"), LogConfig(retention_ms=1), None, 0) is None
