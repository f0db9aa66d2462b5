"""Message timestamps: LogAppendTime stamping, CreateTime bounds, time-based segment roll."""
from __future__ import annotations

import pytest

from rafka.common.config import LogConfig
from rafka.common.errors import InvalidTimestampError
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.record_batch import Compression, Record, TimestampType, decode_records, encode_batch

NOW = 1_800_000_000_000
HOUR = 3_600_000


def batch(timestamps: list[int], codec: int = Compression.NONE) -> bytes:
    return encode_batch([Record(i, ts, b"k%d" % i, b"v" * 30) for i, ts in enumerate(timestamps)],
                        compression=codec)


def stored(log: PartitionLog) -> list[bytes]:
    out = []
    for seg in log.segments:
        for h in seg.iter_headers(0):
            out.append(seg.read_bytes(h.position, h.size))
    return out


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.LZ4, Compression.ZSTD])
def test_log_append_time_stamps_each_batch_and_clients_read_it(tmp_path, codec):
    from kafka.record.default_records import DefaultRecordBatch

    log = PartitionLog.open(tmp_path / "t-0", LogConfig(message_timestamp_type="LogAppendTime"))
    sent = batch([1000, 2000, 3000], codec)
    info = log.append(sent, leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW)
    assert info.log_append_time_ms == NOW and info.max_timestamp == NOW
    [raw] = stored(log)
    header, records = decode_records(raw)  # verifies the recomputed CRC
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME and header.max_timestamp == NOW
    assert header.base_timestamp == 1000  # left as sent, as Kafka does
    assert [r.timestamp for r in records] == [NOW] * 3
    theirs = DefaultRecordBatch(raw)
    assert theirs.validate_crc() and theirs.timestamp_type == 1
    assert [r.timestamp for r in theirs] == [NOW] * 3
    assert log.segments[-1].max_timestamp == NOW


def test_create_time_batches_are_stored_byte_for_byte(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", LogConfig())
    sent = batch([1000, 2000])
    info = log.append(sent, leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW)
    assert info.log_append_time_ms == -1
    [raw] = stored(log)
    assert raw[21:] == sent[21:] and raw[8:12] == sent[8:12]


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.SNAPPY])
def test_create_time_outside_the_bounds_is_refused_and_nothing_written(tmp_path, codec):
    config = LogConfig(message_timestamp_before_max_ms=HOUR, message_timestamp_after_max_ms=HOUR)
    log = PartitionLog.open(tmp_path / "t-0", config)
    with pytest.raises(InvalidTimestampError, match="rejected due to invalid timestamp") as refused:
        log.append(batch([NOW, NOW - 2 * HOUR], codec), leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW)
    [(index, message)] = refused.value.record_errors
    assert index == 1 and f"Timestamp {NOW - 2 * HOUR} of message with offset 1 is out of range" in message
    with pytest.raises(InvalidTimestampError) as refused:
        log.append(batch([NOW + 2 * HOUR, NOW, NOW - 3 * HOUR]), leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW)
    assert [i for i, _ in refused.value.record_errors] == [0, 2]  # every refused record, by index
    assert all(f"within [{NOW - HOUR}, {NOW + HOUR}]" in m for _, m in refused.value.record_errors)
    assert log.log_end_offset == 0 and log.segments[-1].size == 0
    log.append(batch([NOW - HOUR, NOW + HOUR], codec), leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW)
    assert log.log_end_offset == 2


def test_bounds_are_not_checked_for_log_append_time_topics(tmp_path):
    config = LogConfig(message_timestamp_type="LogAppendTime", message_timestamp_before_max_ms=HOUR)
    log = PartitionLog.open(tmp_path / "t-0", config)
    log.append(batch([5]), leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW)
    assert log.log_end_offset == 1


def test_segments_roll_by_message_time_as_kafka(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_ms=HOUR))
    for ts in (NOW, NOW + HOUR // 2, NOW + HOUR):  # within segment.ms of the first batch
        log.append(batch([ts]), leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW)
    assert len(log.segments) == 1
    log.append(batch([NOW + HOUR + 1]), leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW)
    assert [s.base_offset for s in log.segments] == [0, 3]
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_ms=HOUR))  # the first batch is read back
    reopened.append(batch([NOW + 2 * HOUR + 2]), leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW)
    assert [s.base_offset for s in reopened.segments] == [0, 3, 4]


def test_segments_without_timestamps_roll_by_wall_time(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_ms=1000))
    log.append(batch([-1]), leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW)
    log.append(batch([-1]), leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW + 500)
    assert len(log.segments) == 1
    log.append(batch([-1]), leader_epoch=0, max_batch_bytes=1 << 20, now_ms=NOW + 1600)
    assert len(log.segments) == 2


def test_roll_jitter_stays_within_its_bounds(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_ms=HOUR, segment_jitter_ms=HOUR // 2))
    draws = {log._draw_roll_jitter() for _ in range(200)}
    assert min(draws) >= 0 and max(draws) < HOUR // 2 and len(draws) > 100
