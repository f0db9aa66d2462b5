"""A leader's reads of its own log: whole batches below the bound its reader may see, refusals
outside the log, a failed disk as a value; and ListOffsets bounded by the high watermark."""
from __future__ import annotations

import logging

import pytest

from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode
from rafka.partition_worker.leader_reads import lookup_offset, read_batches
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.messages import (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, FetchResult,
                                             OffsetLookup)
from rafka.partition_worker.record_batch import Record, encode_batch

LOG = logging.getLogger(__name__)
MAX = 1 << 20


def batch(first_timestamp: int) -> bytearray:
    return bytearray(encode_batch([Record(i, first_timestamp + i, b"k", b"v" * 40) for i in range(3)]))


@pytest.fixture
def log(tmp_path):
    """Offsets 0-5 in two batches of three (timestamps 1000-1002, then 2000-2002)."""
    log = PartitionLog.open(tmp_path / "t-0", LogConfig())
    for first_timestamp in (1000, 2000):
        log.append(batch(first_timestamp), leader_epoch=0, max_batch_bytes=MAX)
    yield log
    log.close()


def test_a_consumer_reads_whole_batches_up_to_the_high_watermark_and_learns_the_committed_window(log):
    one = len(batch(1000))
    result = read_batches(log, 0, 10, 6, 6, LOG, committed_window=True)   # (at least one whole batch)
    assert (result.error, result.next_offset, result.high_watermark, result.log_start_offset) == (ErrorCode.NONE, 3, 6, 0)
    assert (result.size, result.committed_end) == (one, 2 * one)          # the front end may read on to there
    uncommitted = read_batches(log, 0, MAX, 3, 3, LOG, committed_window=True)
    assert (uncommitted.next_offset, uncommitted.committed_end) == (3, -1)   # its file holds more than is committed
    assert read_batches(log, 3, MAX, 3, 3, LOG) == FetchResult(ErrorCode.NONE, 3, 3, 0)   # at the bound: empty


def test_a_follower_reads_up_to_the_log_end_without_a_window(log):
    result = read_batches(log, 3, MAX, 6, 3, LOG, follower=2)
    assert (result.next_offset, result.high_watermark, result.committed_end) == (6, 3, -1)


@pytest.mark.parametrize("offset", [-1, 7], ids=["below the log start", "past the log end"])
def test_an_offset_outside_the_log_is_out_of_range(log, offset):
    assert read_batches(log, offset, MAX, 6, 3, LOG) == FetchResult(ErrorCode.OFFSET_OUT_OF_RANGE, 3, 3, 0)


def test_a_disk_that_fails_under_a_read_answers_a_storage_error(log, monkeypatch, caplog):
    def failing(*args, **kwargs):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(log, "read", failing)
    assert read_batches(log, 0, MAX, 6, 3, LOG, follower=2).error is ErrorCode.KAFKA_STORAGE_ERROR
    assert "could not read offset 0 for follower 2" in caplog.text


@pytest.mark.parametrize("timestamp, high_watermark, expected", [
    (LATEST_TIMESTAMP, 3, OffsetLookup(ErrorCode.NONE, -1, 3, 7)),
    (EARLIEST_TIMESTAMP, 3, OffsetLookup(ErrorCode.NONE, -1, 0, 7)),
    (MAX_TIMESTAMP, 6, OffsetLookup(ErrorCode.NONE, 2002, 5, 7)),
    (1001, 3, OffsetLookup(ErrorCode.NONE, 1001, 1, 7)),
    (2000, 3, OffsetLookup(ErrorCode.NONE, -1, -1, 7)),        # at or past the high watermark: none yet
    (2000, 6, OffsetLookup(ErrorCode.NONE, 2000, 3, 7)),
    (-9, 6, OffsetLookup(ErrorCode.INVALID_REQUEST)),
], ids=["latest", "earliest", "max timestamp", "by timestamp", "uncommitted", "committed", "bad timestamp"])
def test_list_offsets_answers_within_the_high_watermark(log, timestamp, high_watermark, expected):
    assert lookup_offset(log, timestamp, high_watermark, 7) == expected
