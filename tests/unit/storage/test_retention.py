"""Retention, the log start offset and DeleteRecords on PartitionLog and PartitionReplica (no Ray).

Time is injected (`now_ms`); the delayed removal of `.deleted` files is driven the same way.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import replace

import pytest

from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode, OffsetOutOfRangeError
from rafka.common.types import TopicPartition
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.messages import DeleteRecordsResult
from rafka.partition_worker.producer_state import list_snapshots
from rafka.partition_worker.record_batch import Record, encode_batch
from rafka.partition_worker.replica_actor import PartitionReplica
from rafka.partition_worker.replica_state import LeaderAndIsr
from rafka.partition_worker.segment import FileRegion
from tests.waiting import eventually

MAX = 1 << 20
NOW = 1_700_000_000_000
HOUR = 3_600_000
SMALL = LogConfig(segment_bytes=1024, index_interval_bytes=128, retention_ms=-1, retention_bytes=-1,
                  file_delete_delay_ms=60_000)


def config(**changes) -> LogConfig:
    return replace(SMALL, **changes)


def batch(ts: int, n: int = 3, producer_id: int = -1, sequence: int = -1) -> bytes:
    records = [Record(i, ts, f"k{i}".encode(), b"v" * 40) for i in range(n)]
    return encode_batch(records, producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                        base_sequence=sequence)


def append(log: PartitionLog, ts: int, **kwargs) -> int:
    return log.append(batch(ts, **kwargs), leader_epoch=0, max_batch_bytes=MAX).base_offset


def fill_segments(log: PartitionLog, count: int, ts: int) -> None:
    """Append until `count` more segments than now are sealed (the active one is new)."""
    target = len(log.segments) + count
    while len(log.segments) < target:
        append(log, ts)


def open_log(path, config: LogConfig = SMALL, **kwargs) -> PartitionLog:
    return PartitionLog.open(path, config, now_ms=NOW, **kwargs)


def deleted_files(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".deleted"))


# -- time ------------------------------------------------------------------------------------
def test_time_retention_deletes_segments_whose_largest_timestamp_is_too_old(tmp_path, caplog):
    log = open_log(tmp_path / "t-0", config(retention_ms=HOUR))
    fill_segments(log, 3, ts=NOW - 3 * HOUR)
    old_bases = [s.base_offset for s in log.segments[:3]]
    fill_segments(log, 2, ts=NOW)  # the first of these holds the last old batch too: it stays
    before = log.segments
    with caplog.at_level(logging.INFO, logger="rafka.partition_worker.log"):
        assert log.delete_old_segments(log.log_end_offset, now_ms=NOW) == 3
    assert log.segments == before[3:]
    assert log.log_start_offset == before[3].base_offset
    assert "due to log retention time 3600000ms breach" in caplog.text
    assert "Incremented log start offset to %d due to SegmentDeletion" % log.log_start_offset in caplog.text
    with pytest.raises(OffsetOutOfRangeError):
        log.read(log.log_start_offset - 1, MAX)
    assert log.read(log.log_start_offset, MAX).regions
    names = deleted_files(tmp_path / "t-0")
    for base in old_bases:
        for suffix in (".log", ".index", ".timeindex"):
            assert f"{base:020d}{suffix}.deleted" in names or suffix != ".log"
        assert not (tmp_path / "t-0" / f"{base:020d}.log").exists()


def test_time_retention_is_off_at_minus_one_and_not_breached_at_exactly_retention_ms(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill_segments(log, 3, ts=NOW - 100 * HOUR)
    assert log.delete_old_segments(log.log_end_offset, now_ms=NOW) == 0
    exact = PartitionLog.open(tmp_path / "u-0", config(retention_ms=HOUR))
    fill_segments(exact, 2, ts=NOW - HOUR)
    assert exact.delete_old_segments(exact.log_end_offset, now_ms=NOW) == 0  # Kafka: strictly older
    assert exact.delete_old_segments(exact.log_end_offset, now_ms=NOW + 1) == 3  # the active one too, after a roll


def test_time_retention_stops_at_the_first_segment_it_keeps(tmp_path):
    log = open_log(tmp_path / "t-0", config(retention_ms=HOUR))
    fill_segments(log, 1, ts=NOW)             # young first segment
    fill_segments(log, 2, ts=NOW - 5 * HOUR)  # older ones after it are kept behind it
    assert log.delete_old_segments(log.log_end_offset, now_ms=NOW) == 0
    assert log.log_start_offset == 0


# -- size ------------------------------------------------------------------------------------
def test_size_retention_deletes_oldest_segments_while_the_log_stays_above_the_limit(tmp_path, caplog):
    log = open_log(tmp_path / "t-0")
    fill_segments(log, 5, ts=NOW)
    append(log, NOW)
    sizes = [s.size for s in log.segments]
    limit = sum(sizes) - sizes[0] - sizes[1] - 1  # two whole segments over, not three
    sized = open_log(tmp_path / "t-0", config(retention_bytes=limit))
    log.close()
    with caplog.at_level(logging.INFO, logger="rafka.partition_worker.log"):
        assert sized.delete_old_segments(sized.log_end_offset, now_ms=NOW) == 2
    assert sized.size_bytes >= limit and sized.size_bytes - sized.segments[0].size < limit
    assert f"due to log retention size {limit} breach" in caplog.text
    assert sized.delete_old_segments(sized.log_end_offset, now_ms=NOW) == 0


def test_size_retention_is_off_at_minus_one_and_below_the_limit(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill_segments(log, 4, ts=NOW)
    assert log.delete_old_segments(log.log_end_offset, now_ms=NOW) == 0
    roomy = open_log(tmp_path / "u-0", config(retention_bytes=10 * 1024))
    fill_segments(roomy, 4, ts=NOW)
    assert roomy.delete_old_segments(roomy.log_end_offset, now_ms=NOW) == 0


def test_compact_only_policy_applies_no_time_or_size_retention(tmp_path):
    compact = config(retention_ms=1, retention_bytes=0, cleanup_policy=("compact",))
    log = open_log(tmp_path / "t-0", compact)
    fill_segments(log, 3, ts=NOW - HOUR)
    assert log.delete_old_segments(log.log_end_offset, now_ms=NOW) == 0
    log.maybe_increment_log_start_offset(log.segments[2].base_offset, log.log_end_offset, "test")
    assert log.delete_old_segments(log.log_end_offset, now_ms=NOW) == 2  # log start applies to every policy


# -- the active segment and the high watermark --------------------------------------------------
def test_active_segment_is_never_deleted_the_log_rolls_first(tmp_path):
    log = open_log(tmp_path / "t-0", config(retention_ms=HOUR))
    fill_segments(log, 2, ts=NOW - 2 * HOUR)
    append(log, NOW - 2 * HOUR)
    end = log.log_end_offset
    assert log.delete_old_segments(end, now_ms=NOW) == 3
    assert [(s.base_offset, s.size) for s in log.segments] == [(end, 0)]
    assert log.log_start_offset == log.log_end_offset == end
    assert log.read(end, MAX).regions == ()
    assert log.delete_old_segments(end, now_ms=NOW) == 0  # an empty active segment stays, no roll
    assert append(log, NOW) == end


def test_only_segments_wholly_below_the_high_watermark_are_deleted(tmp_path):
    log = open_log(tmp_path / "t-0", config(retention_ms=HOUR))
    fill_segments(log, 4, ts=NOW - 2 * HOUR)
    bases = [s.base_offset for s in log.segments]
    assert log.delete_old_segments(bases[2] - 1, now_ms=NOW) == 1  # segment 1 reaches past it
    assert log.log_start_offset == bases[1]
    assert log.delete_old_segments(bases[2], now_ms=NOW) == 1
    assert log.delete_old_segments(log.log_end_offset - 1, now_ms=NOW) == 2  # not the active one
    assert [s.base_offset for s in log.segments] == bases[4:]


# -- the log start offset -------------------------------------------------------------------------
def test_log_start_offset_moves_inside_a_segment_and_reads_below_it_fail(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill_segments(log, 3, ts=NOW)
    bases = [s.base_offset for s in log.segments]
    assert log.maybe_increment_log_start_offset(bases[1] + 3, log.log_end_offset, "ClientRecordDeletion")
    assert not log.maybe_increment_log_start_offset(bases[1], log.log_end_offset, "ClientRecordDeletion")
    assert log.log_start_offset == bases[1] + 3
    with pytest.raises(OffsetOutOfRangeError):
        log.read(bases[1] + 2, MAX)
    assert log.read(bases[1] + 3, MAX).regions
    assert log.delete_segments_below_log_start(log.log_end_offset, now_ms=NOW) == 1
    assert log.segments[0].base_offset == bases[1] and log.log_start_offset == bases[1] + 3
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(log.log_end_offset + 1, log.log_end_offset, "ClientRecordDeletion")
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(bases[2] + 1, bases[2], "ClientRecordDeletion")
    assert log.log_start_offset == bases[1] + 3


def test_reopen_keeps_the_log_start_offset_passed_in_and_clamps_it(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path)
    fill_segments(log, 2, ts=NOW)
    append(log, NOW)
    end = log.log_end_offset
    log.maybe_increment_log_start_offset(7, end, "ClientRecordDeletion")
    log.close()
    again = open_log(path, log_start_offset=7)
    assert again.log_start_offset == 7
    with pytest.raises(OffsetOutOfRangeError):
        again.read(6, MAX)
    again.close()
    assert open_log(path).log_start_offset == 0  # nothing passed: the first segment's base
    for passed, expected in ((-5, 0), (end + 100, end)):
        reopened = open_log(path, log_start_offset=passed)
        assert reopened.log_start_offset == expected
        reopened.close()


# -- the delayed removal of files -----------------------------------------------------------------
def test_deleted_files_are_removed_after_the_delay(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path, config(retention_ms=HOUR))
    fill_segments(log, 2, ts=NOW - 2 * HOUR)
    assert log.delete_old_segments(log.segments[2].base_offset, now_ms=NOW) == 2
    assert len(deleted_files(path)) >= 2 and log.next_file_deletion_ms == NOW + 60_000
    assert log.delete_pending_files(NOW + 59_999) == 0
    assert deleted_files(path)
    assert log.delete_pending_files(NOW + 60_000) == 2
    assert deleted_files(path) == [] and log.next_file_deletion_ms is None


def test_leftover_deleted_files_are_removed_on_open(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path, config(retention_ms=HOUR))
    fill_segments(log, 2, ts=NOW - 2 * HOUR)
    append(log, NOW)
    log.delete_old_segments(log.log_end_offset, now_ms=NOW)
    start = log.log_start_offset
    log.close()  # before the delay passed
    assert deleted_files(path)
    again = open_log(path, log_start_offset=start)
    assert deleted_files(path) == []
    assert again.log_start_offset == start and again.segments[0].base_offset == start


# -- producer state ----------------------------------------------------------------------------------
def test_producer_state_and_snapshots_below_the_log_start_are_dropped(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path, config(retention_ms=HOUR))
    old_pid, new_pid = 7001, 7002
    append(log, NOW - 2 * HOUR, producer_id=old_pid, sequence=0)
    fill_segments(log, 2, ts=NOW - 2 * HOUR)
    append(log, NOW, producer_id=new_pid, sequence=0)
    assert {old_pid, new_pid} <= set(log.producer_state.producers)
    assert any(offset < log.segments[2].base_offset for offset, _ in list_snapshots(path))
    assert log.delete_old_segments(log.log_end_offset, now_ms=NOW) == 2
    assert old_pid not in log.producer_state.producers and new_pid in log.producer_state.producers
    assert all(offset >= log.log_start_offset for offset, _ in list_snapshots(path))
    log.close()
    again = open_log(path, log_start_offset=log.log_start_offset)
    assert set(again.producer_state.producers) == {new_pid}


# -- reads that race deletion ---------------------------------------------------------------------------
def test_a_region_read_before_retention_still_reads_back_its_bytes(tmp_path):
    log = open_log(tmp_path / "t-0", config(retention_ms=HOUR))
    fill_segments(log, 2, ts=NOW - 2 * HOUR)
    taken = log.read(0, MAX)
    region = taken.regions[0]
    expected = log.read_bytes(region)
    assert region.inode == log.segments[0].inode and region.inode != 0
    log.delete_old_segments(log.log_end_offset, now_ms=NOW)
    assert not os.path.exists(region.path) and os.path.exists(region.path + ".deleted")
    assert log.read_bytes(region) == expected
    log.delete_pending_files(NOW + SMALL.file_delete_delay_ms)
    with pytest.raises(FileNotFoundError):
        log.read_bytes(region)


def test_a_region_never_reads_another_file_that_took_its_name(tmp_path):
    """A compaction swap puts a new file at the segment's path: the region still reads its
    own bytes from `.deleted`, and once that is gone it fails rather than read the new file."""
    log = open_log(tmp_path / "t-0")
    fill_segments(log, 1, ts=NOW)
    region = log.read(0, MAX).regions[0]
    expected = log.read_bytes(region)
    os.replace(region.path, region.path + ".deleted")
    with open(region.path, "wb") as f:
        f.write(b"X" * (region.position + region.length))
    assert log.read_bytes(region) == expected
    os.unlink(region.path + ".deleted")
    with pytest.raises(FileNotFoundError):
        log.read_bytes(region)
    unknown = FileRegion(region.path, region.position, 4)  # no identity: the path as it is
    assert log.read_bytes(unknown) == b"XXXX"


# -- DeleteRecords on the replica -------------------------------------------------------------------------
def make_replica(tmp_path, config: LogConfig = SMALL, leader: int = 1) -> PartitionReplica:
    replica = PartitionReplica(1, TopicPartition("t", 0), str(tmp_path), config)
    assert replica.become(LeaderAndIsr(leader, 1, (1,), (1,), 1)) is ErrorCode.NONE
    return replica


def test_delete_records_bounds(tmp_path):
    async def scenario() -> None:
        replica = make_replica(tmp_path)
        for i in range(12):
            assert replica.append([batch(NOW + i)], -1)[0].error is ErrorCode.NONE
        hw = replica.status().high_watermark
        assert hw == 36
        assert await replica.delete_records(hw + 1) == DeleteRecordsResult(ErrorCode.OFFSET_OUT_OF_RANGE)
        assert await replica.delete_records(-2) == DeleteRecordsResult(ErrorCode.OFFSET_OUT_OF_RANGE)
        assert await replica.delete_records(10) == DeleteRecordsResult(ErrorCode.NONE, 10)
        assert await replica.delete_records(4) == DeleteRecordsResult(ErrorCode.NONE, 10)  # never backwards
        assert replica.status().log_start_offset == 10
        assert replica.list_offset(-2).offset == 10
        assert (await replica.read(9, MAX)).error is ErrorCode.OFFSET_OUT_OF_RANGE
        fetched = await replica.read(10, MAX)
        assert fetched.error is ErrorCode.NONE and fetched.log_start_offset == 10
        assert await replica.delete_records(-1) == DeleteRecordsResult(ErrorCode.NONE, hw)  # -1: the HW
        segments = replica.serving.log.segments  # every segment but the active one went (Kafka: no roll here)
        assert len(segments) == 1 and segments[0].base_offset < hw == segments[0].next_offset
        replica.close()

    asyncio.run(scenario())


def test_delete_records_is_refused_off_the_leader_and_for_compact_only_topics(tmp_path):
    async def scenario() -> None:
        follower = make_replica(tmp_path / "a", leader=2)
        assert await follower.delete_records(0) == DeleteRecordsResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        follower.close()
        compacted = make_replica(tmp_path / "b", config(cleanup_policy=("compact",)))
        assert await compacted.delete_records(0) == DeleteRecordsResult(ErrorCode.POLICY_VIOLATION)
        compacted.close()

    asyncio.run(scenario())


def test_replica_applies_retention_periodically_and_removes_files_when_due(tmp_path):
    """The actor's own schedule: retention.check.interval.ms, then file.delete.delay.ms."""
    quick = config(retention_ms=HOUR, retention_check_interval_ms=20, file_delete_delay_ms=300)

    async def scenario() -> None:
        replica = make_replica(tmp_path, quick)
        directory = tmp_path / "t-0"
        old = int(time.time() * 1000) - 2 * HOUR
        while len(replica.serving.log.segments) < 3:
            replica.append([batch(old)], -1)
        end = replica.status().log_end_offset
        await replica.ready()
        await eventually(lambda: replica.status().log_start_offset == end)
        assert deleted_files(directory)  # renamed first...
        await eventually(lambda: not deleted_files(directory))  # ...removed after the delay
        assert sorted(p.name for p in directory.glob("*.log")) == [f"{end:020d}.log"]
        replica.close()

    asyncio.run(scenario())
