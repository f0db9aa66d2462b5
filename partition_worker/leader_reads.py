"""The leader's answers read from its log: whole batches, and ListOffsets lookups.

Pure functions of a `PartitionLog` and the high watermark (the caller has checked that it
leads, and which end bounds the read): a read_uncommitted consumer reads up to the high
watermark, a read_committed one up to the last stable offset (with the aborted transactions
among what it read, KIP-98), the broker's own read and a follower's up to the log end. Every
answer reports the last stable offset, as Kafka's does. Errors come back as values:
OFFSET_OUT_OF_RANGE outside the log, KAFKA_STORAGE_ERROR when the disk fails under a read (the
client refreshes its metadata and retries).
"""
from __future__ import annotations

import logging

from rafka.common.errors import ErrorCode, OffsetOutOfRangeError
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.messages import (
    EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, AbortedTransaction, FetchResult,
    OffsetLookup, Region,
)

READ_COMMITTED = 1   # ListOffsets' and Fetch's isolation_level (0: read_uncommitted)


def read_batches(log: PartitionLog, fetch_offset: int, max_bytes: int, end: int, high_watermark: int,
                 logger: logging.Logger | logging.LoggerAdapter, *, last_stable_offset: int | None = None,
                 read_committed: bool = False, committed_window: bool = False,
                 follower: int | None = None) -> FetchResult:
    """Whole batches from `fetch_offset` below `end` (at most `max_bytes`, but at least one
    batch), as file regions, with `high_watermark` and `last_stable_offset` (None: the high
    watermark) to report; empty at or past `end`. With `read_committed` (`end` is then the
    last stable offset) the answer lists the aborted transactions overlapping what it read
    (Kafka's `LocalLog.collectAbortedTransactions`; an empty list when it read nothing). With
    `committed_window`, the answer says where the committed batches end in the file of its
    last region (a consumer's read: the front end reads on up to there itself), and whether
    that window is stable (below the last stable offset, no abort in it or after it) for a
    read_committed consumer's next reads. `follower` names the broker whose fetch this is, if
    it is one (for the log line of a failed read)."""
    hw, start = high_watermark, log.log_start_offset
    lso = hw if last_stable_offset is None else last_stable_offset
    if fetch_offset > log.log_end_offset or fetch_offset < start:
        return FetchResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, lso, start)
    nothing = FetchResult(ErrorCode.NONE, hw, lso, start, aborted_transactions=() if read_committed else None)
    if fetch_offset >= end:
        return nothing
    try:
        result = log.read(fetch_offset, max_bytes, max_offset=end)
    except OffsetOutOfRangeError:
        return FetchResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, lso, start)
    except OSError:
        if follower is None:
            logger.exception("could not read offset %d", fetch_offset)
        else:
            logger.exception("could not read offset %d for follower %d", fetch_offset, follower)
        return FetchResult(ErrorCode.KAFKA_STORAGE_ERROR, hw, lso, start)
    if not result.regions:
        return nothing
    regions = tuple(Region(r.path, r.position, r.length, r.inode) for r in result.regions)
    aborted = None
    if read_committed:
        aborted = tuple(AbortedTransaction(t.producer_id, t.first_offset)
                        for t in log.aborted_transactions(fetch_offset, result.next_offset))
    committed_end = log.committed_end(regions[-1].path, hw) if committed_window else -1
    return FetchResult(ErrorCode.NONE, hw, lso, start, regions, result.next_offset, committed_end, aborted,
                       committed_end >= 0 and _stable(log, regions[-1].path, lso))


def _stable(log: PartitionLog, path: str, last_stable_offset: int) -> bool:
    """Whether the segment file `path` (whole below the high watermark) is below the last stable
    offset too and no aborted transaction is indexed in it or after it: a read_committed read
    of it reads what a read_uncommitted one does, with no abort to report."""
    for segment in reversed(log.segments):
        if str(segment.log_path) == path:
            return (segment.next_offset <= last_stable_offset
                    and not log.transactions.has_aborts_from(segment.base_offset))
    return False


def lookup_offset(log: PartitionLog, timestamp: int, high_watermark: int, leader_epoch: int, *,
                  last_stable_offset: int | None = None, isolation_level: int = 0) -> OffsetLookup:
    """ListOffsets: the latest offset (the high watermark; with `isolation_level`
    READ_COMMITTED the last stable offset), the earliest (the log start), the one of the
    largest timestamp, or the first at or after `timestamp` below that latest offset ((-1, -1)
    when there is none), as Kafka's `Partition.fetchOffsetForTimestamp`; INVALID_REQUEST for
    another negative timestamp."""
    hw, epoch = high_watermark, leader_epoch
    if isolation_level == READ_COMMITTED and last_stable_offset is not None:
        hw = last_stable_offset   # (the last fetchable offset)
    if timestamp == LATEST_TIMESTAMP:
        return OffsetLookup(ErrorCode.NONE, -1, hw, epoch)
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        return OffsetLookup(ErrorCode.NONE, -1, log.log_start_offset, epoch)
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp_offset() if hasattr(log, "max_timestamp_offset") else None
        if found is None:
            return OffsetLookup(ErrorCode.NONE, -1, -1, epoch)
        offset, ts = found
        return OffsetLookup(ErrorCode.NONE, ts, offset, epoch)
    if timestamp < 0:
        return OffsetLookup(ErrorCode.INVALID_REQUEST)
    found = log.offset_for_timestamp(timestamp)
    if found is None or found[0] >= hw:
        return OffsetLookup(ErrorCode.NONE, -1, -1, epoch)
    offset, ts = found
    return OffsetLookup(ErrorCode.NONE, ts, offset, epoch)
