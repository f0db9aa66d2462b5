"""A rolled segment's fsync off the replica's event loop (`PartitionLog.flush_rolled_later`): the
append that rolls does not wait for it, and the recovery point moves only once it is done and
only if the log was not truncated or closed meanwhile."""
from __future__ import annotations

import asyncio
import errno
import threading
import time

from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.record_batch import Record, encode_batch
from rafka.partition_worker.replica_actor import PartitionReplica
from rafka.partition_worker.replica_state import LeaderAndIsr
from rafka.partition_worker.segment import LogSegment
from tests.waiting import eventually

SMALL = LogConfig(segment_bytes=1024, index_interval_bytes=128, retention_ms=-1, retention_bytes=-1)


def batch() -> bytes:
    return encode_batch([Record(0, int(time.time() * 1000), b"k", b"v" * 200)])


def rolled_log(tmp_path, segments: int = 2):
    """A log whose rolls are handed over (not flushed), filled until it has `segments`."""
    handed: list = []
    log = PartitionLog.open(tmp_path / "t-0", SMALL, flush_rolled_later=lambda segs, done: handed.append((segs, done)))
    while len(log.segments) < segments:
        log.append(batch(), leader_epoch=0, max_batch_bytes=1 << 20)
    return log, handed


def test_a_roll_hands_the_rolled_segment_over_and_the_recovery_point_moves_when_it_is_done(tmp_path):
    log, handed = rolled_log(tmp_path)
    assert len(handed) == 1 and log.recovery_point == 0      # not fsynced at the roll
    segments, done = handed[0]
    assert segments == (log.segments[0],)
    assert log.flushed_bytes()[str(log.segments[0].log_path)] < log.segments[0].size
    done()
    assert log.recovery_point == log.segments[1].base_offset
    log.close()


def test_a_flush_that_ends_after_a_truncation_moves_nothing(tmp_path):
    log, handed = rolled_log(tmp_path, segments=3)
    (_, first_done), (_, second_done) = handed
    first_done()
    recovered = log.recovery_point
    log.truncate_to(recovered)               # the second rolled segment's data goes...
    while len(log.segments) < 3:             # ...and new data takes its offsets
        log.append(batch(), leader_epoch=0, max_batch_bytes=1 << 20)
    second_done()                            # its old flush says nothing of the new data
    assert log.recovery_point == recovered
    log.close()
    assert log.recovery_point == log.log_end_offset


def test_a_flush_that_ends_after_the_log_closed_is_ignored(tmp_path):
    log, handed = rolled_log(tmp_path)
    log.close()
    end = log.recovery_point
    handed[0][1]()
    assert log.recovery_point == end


def flush_sealed_segments_with(monkeypatch, flush_sealed) -> None:
    """Segments sealed from now on (rolled, or closed) fsync through `flush_sealed(segment)`,
    which then calls the real flush or raises."""
    real_flush, real_seal = LogSegment.flush, LogSegment.seal
    monkeypatch.setattr(LogSegment, "sealed_for_test", False, raising=False)

    def flush(segment: LogSegment) -> None:
        if segment.sealed_for_test:
            flush_sealed(segment)
        real_flush(segment)

    def seal(segment: LogSegment) -> None:
        segment.sealed_for_test = True
        real_seal(segment)

    monkeypatch.setattr(LogSegment, "flush", flush)
    monkeypatch.setattr(LogSegment, "seal", seal)


async def rolled_replica(tmp_path) -> PartitionReplica:
    """A leader replica appended to until its first segment rolled."""
    replica = PartitionReplica(1, TopicPartition("t", 0), str(tmp_path), SMALL)
    assert replica.become(LeaderAndIsr(1, 1, (1,), (1,), 1)) is ErrorCode.NONE
    while len(replica.serving.log.segments) < 2:
        assert replica.append([batch()], -1)[0].error is ErrorCode.NONE
    return replica


def test_a_replica_appends_on_while_its_rolled_segment_is_fsynced_elsewhere(tmp_path, monkeypatch):
    go = threading.Event()
    flushed_on: list[int] = []

    def slow(_segment: LogSegment) -> None:
        assert go.wait(10)
        flushed_on.append(threading.get_ident())

    flush_sealed_segments_with(monkeypatch, slow)

    async def scenario() -> None:
        replica = await rolled_replica(tmp_path)   # the roll returned while its fsync waits for `go`
        log = replica.serving.log
        assert replica.append([batch()], -1)[0].error is ErrorCode.NONE
        assert log.recovery_point == 0
        go.set()
        await eventually(lambda: log.recovery_point == log.segments[1].base_offset, "the recovery point did not move")
        assert flushed_on and threading.get_ident() not in flushed_on
        replica.close()

    asyncio.run(scenario())


def test_a_failed_background_fsync_takes_the_log_offline(tmp_path, monkeypatch):
    def failing(_segment: LogSegment) -> None:
        if threading.current_thread() is not threading.main_thread():
            raise OSError(errno.EIO, "Input/output error")

    flush_sealed_segments_with(monkeypatch, failing)

    async def scenario() -> None:
        replica = await rolled_replica(tmp_path)
        log = replica.serving.log
        await eventually(lambda: log.offline, "the log did not go offline")
        assert "Input/output error" in log.offline_reason and log.recovery_point == 0
        assert replica.append([batch()], -1)[0].error is ErrorCode.KAFKA_STORAGE_ERROR
        replica.close()

    asyncio.run(scenario())
