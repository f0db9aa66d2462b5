"""`PartitionLog`: the segmented log of one partition replica in `<log.dir>/<topic>-<partition>/`.

Files are Kafka's: `<20-digit base offset>.log`, `.index`, `.timeindex` per segment.
Recovery follows Kafka's UnifiedLog/LogLoader, simplified:
- the clean-shutdown marker `.kafka_cleanshutdown` lives *inside the partition directory*
  (Kafka keeps one per log dir); `close()` writes it and `open()` removes it;
- with the marker, segments are trusted and only their indexes are loaded and sanity-checked;
- without it, every segment holding offsets at or after the recovery point (the offset below
  which everything was fsynced, from the log dir's `recovery-point-offset-checkpoint`) is scanned
  batch by batch; the first invalid batch is cut off with everything after it, later segments
  included (Kafka's `LogLoader.recoverLog`). Segments below the recovery point are trusted and
  only rebuilt when their index is missing or fails its sanity check. With no checkpoint known
  (`recovery_point=None`) the recovery point is 0 and every segment is scanned, as Kafka does:
  correct for any log, at the cost of reading it all once after an unclean stop.

Flush policy (Kafka's `flush.messages` / `flush.ms`): an append that leaves `flush.messages`
or more unflushed records flushes at once; `maybe_flush(now_ms)`, which the replica calls every
`log.flush.scheduler.interval.ms` (Kafka's `LogManager.flushDirtyLogs`), flushes when there is
unflushed data and `flush.ms` has passed since the last flush. A rolled segment is fsynced at
the roll, or by the owning actor off its event loop (`flush_rolled_later`, as Kafka's scheduler
thread does). `recovery_point` moves up on every flush; after an unclean open it stays where
the checkpoint said (capped at the log end), as Kafka: only a flush makes data durable.

Idempotent producers (KIP-98): the log owns a `ProducerStateManager`. Every client batch is
checked against it before it is written (duplicates are answered with their first offsets and
not written again); a snapshot `<offset>.snapshot` is written at every roll and at `close`,
and `open` loads the newest usable snapshot and replays the batches after it, as Kafka's
`UnifiedLog.loadProducerState`. Snapshots above the recovered log end are deleted first. The
snapshot holds each producer's last five batches (Kafka's format, one entry per batch: see
`ProducerStateManager`), so a rest (close, then open on a wake) keeps the dedupe window.

The log start offset is state of its own (Kafka's `logStartOffset`): DeleteRecords moves it
into the middle of a segment, retention (`retention.py`) moves it to the new first segment's
base. Reads below it fail, and producer state and snapshots below it are dropped. The caller
persists it (the log dir's `log-start-offset-checkpoint`) and passes it back to `open`.

Followers: `append_as_follower` stores the leader's batches as they are (Kafka's
`appendAsFollower`), `truncate_to` drops a divergent tail at batch granularity and
`truncate_fully_and_start_at` starts the log afresh (Kafka's `truncateTo` and
`truncateFullyAndStartAt`). The leader-epoch cache is the caller's: these report or leave
what it needs (epoch starts, the new log end).
"""
from __future__ import annotations

import logging
import os
import random
import time
from bisect import bisect_right
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator

from rafka.common.config import LogConfig
from rafka.common.errors import (
    InvalidRecordError, KafkaStorageError, OffsetOutOfRangeError, RecordBatchTooLargeError,
)
from rafka.common.logging_util import Prefixed
from rafka.partition_worker import timestamps
from rafka.partition_worker import cleaner as _cleaner
from rafka.partition_worker.cleaner import CleanableInfo, CleanResult, LogCleaning
from rafka.partition_worker import retention
from rafka.partition_worker.checkpoints import EpochEntry
from rafka.partition_worker.file_reaper import remove_now
from rafka.partition_worker.follower_append import check_follower_offsets
from rafka.partition_worker.control_records import EndTransactionMarker, encode_marker_batch
from rafka.partition_worker.log_transactions import LogTransactions
from rafka.partition_worker.producer_state import ProducerStateManager
from rafka.partition_worker.txn_index import TXN_INDEX_SUFFIX, AbortedTxn
from rafka.partition_worker.record_batch import (
    BatchHeader, TimestampType, assign_offsets, decode_records, parse_header, validate_batches,
)
from rafka.partition_worker.segment import (
    INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, FileRegion, LogSegment, segment_name,
)
from rafka.partition_worker.segment_files import read_region
from rafka.partition_worker.storage_failure import storage_write

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
_INT32_MAX = 0x7FFFFFFF


@dataclass(frozen=True)
class AppendInfo:
    """What one append wrote: offsets [base_offset, last_offset] in `batch_count` batches."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    batch_count: int
    record_count: int
    log_append_time_ms: int = -1
    log_start_offset: int = 0
    duplicate: bool = False  # a retried idempotent batch: answered with its first offsets, not written
    # Follower appends: (epoch, first offset) where each leader epoch starts in the batches, for
    # LeaderEpochCache.assign (see `PartitionLog.append_as_follower`).
    epoch_starts: tuple[EpochEntry, ...] = ()


@dataclass(frozen=True)
class ReadResult:
    """Whole batches as file regions; `next_offset` is the offset after the last returned batch
    (the requested offset when nothing was returned)."""

    regions: tuple[FileRegion, ...]
    next_offset: int

    @property
    def size(self) -> int:
        return sum(r.length for r in self.regions)


# fsyncs rolled segments elsewhere, then calls `done()` on the owner's thread (`PartitionLog.open`)
RolledFlush = Callable[[tuple[LogSegment, ...], Callable[[], None]], None]


class PartitionLog:
    """Segmented log of one replica on one disk.

    Invariants: segment base offsets strictly increase; the last segment is the active one and
    the only one appended to; `log_end_offset` is the active segment's next offset. The segment
    list is an immutable tuple replaced (never mutated) on roll, so a reader that took it keeps a
    stable snapshot. Not safe for concurrent writers: the owning actor serialises calls. Reads
    may run between appends and only ever see whole, written batches.
    """

    def __init__(self, directory: Path, config: LogConfig, segments: list[LogSegment], *,
                 remove_file: Callable[[str], None] = remove_now,
                 flush_rolled_later: RolledFlush | None = None) -> None:
        self.directory = directory
        self.config = config
        self._segments: tuple[LogSegment, ...] = tuple(segments)
        self._bases: tuple[int, ...] = tuple(s.base_offset for s in segments)
        self._recovery_point = self.log_end_offset  # `open` sets the real value
        self._last_flush_ms = 0
        self._random = random.Random()
        self._roll_jitter_ms = self._draw_roll_jitter()
        self._rolling_timestamps: dict[int, tuple[int, int]] = {}
        self._log_start_offset = segments[0].base_offset
        self._pending_deletes: list[tuple[int, LogSegment]] = []  # (due ms, segment renamed .deleted)
        self._closed = False
        self.offline_reason: str | None = None  # why the log takes no writes (its log dir failed)
        self._swapped_out: list[tuple[int, tuple[LogSegment, ...]]] = []  # (delete at ms, segments)
        self._remove_file = remove_file
        self._flush_rolled_later = flush_rolled_later
        self._truncations = 0   # a background flush finished after a truncation moves nothing
        self._logger = Prefixed(logging.getLogger(__name__),
                                f"[PartitionLog partition={directory.name}, dir={directory.parent}]")
        self.producer_state = ProducerStateManager(config.producer_id_expiration_ms)
        self.transactions = LogTransactions(directory, self.producer_state)

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, directory: Path, config: LogConfig, *, now_ms: int | None = None,
             recovery_point: int | None = None, log_start_offset: int | None = None,
             remove_file: Callable[[str], None] = remove_now,
             flush_rolled_later: RolledFlush | None = None) -> "PartitionLog":
        """Open (creating if needed) the log in `directory`, recovering it after an unclean stop.

        `recovery_point` is the checkpointed offset below which everything was fsynced (None:
        unknown, so 0). After an unclean stop the segments from the one holding it onwards are
        scanned; see the module docstring. `log_start_offset` is the persisted value (the log
        dir's checkpoint), clamped into [first segment's base, log end]; None: the first
        segment's base. Interrupted cleaner swaps are completed or rolled back and files left
        as `.deleted` are removed first. `now_ms` starts the `flush.ms` clock and expires
        producers.

        `remove_file` removes a deleted segment's file once file.delete.delay.ms has passed: at
        once by default; an actor hands it to its process's `FileReaper` (freeing a big file's
        blocks takes time its event loop must not spend). `flush_rolled_later(segments, done)`,
        when given, fsyncs rolled segments elsewhere and then calls `done()` on the owner's
        thread to move the recovery point; without it the append that rolls fsyncs them (Kafka
        flushes a rolled segment on its scheduler thread: with the page cache holding up to
        30 s of writes, the fsync of a 1 GiB segment can take seconds).
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        logger = Prefixed(logging.getLogger(__name__),
                          f"[PartitionLog partition={directory.name}, dir={directory.parent}]")
        now = now_ms if now_ms is not None else _now_ms()
        marker = directory / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        _cleaner.recover_interrupted_swaps(directory, logger)
        leftovers = retention.remove_leftover_deleted_files(directory)
        if leftovers:
            logger.info("removed %d files left marked for deletion: %s", len(leftovers), ", ".join(leftovers[:10]))
        bases = sorted(int(p.name[:-len(LOG_SUFFIX)]) for p in directory.iterdir()
                       if p.name.endswith(LOG_SUFFIX) and p.name[:-len(LOG_SUFFIX)].isdigit())
        for p in directory.iterdir():  # indexes whose segment is gone (Kafka deletes them too)
            stem, _, suffix = p.name.partition(".")
            if suffix in ("index", "timeindex") and stem.isdigit() and int(stem) not in bases:
                logger.warning("deleting orphan index file %s", p.name)
                p.unlink()
        kwargs = dict(index_interval_bytes=config.index_interval_bytes,
                      max_index_entries=max(1, config.segment_index_bytes // 8))
        checkpoint = 0 if recovery_point is None else max(0, recovery_point)
        # The first segment to scan holds the recovery point (Kafka's segments.values(recoveryPoint, ...)).
        first_scanned = len(bases) if clean else max(0, bisect_right(bases, checkpoint) - 1)
        segments: list[LogSegment] = []
        if not bases:
            segments.append(LogSegment.create(directory, 0, **kwargs))
        for i, base in enumerate(bases):
            scan = i >= first_scanned
            seg = LogSegment.open(directory, base, recover=scan, **kwargs)
            segments.append(seg)
            if not scan and seg.recovered_bytes is not None:
                seg.flush()  # a rebuilt index of a trusted segment: make it durable like the rest
            if seg.recovered_bytes:
                logger.warning("recovery truncated %d bytes of segment %d; log end of segment is %d",
                               seg.recovered_bytes, base, seg.next_offset)
            seg.flushed_size = seg.size if clean else _durable_bytes(seg, checkpoint)
            # A bad batch ends the log: the segments after it go too (Kafka's recoverLog). So does a
            # scanned segment that ends short of the next one's base: a power cut took its tail
            # (compacted logs have such gaps legitimately, so not for them).
            lost_tail = i + 1 < len(bases) and seg.next_offset < bases[i + 1] and not config.compact
            if scan and i + 1 < len(bases) and (seg.recovered_bytes or lost_tail):
                for later in bases[i + 1:]:
                    logger.warning("deleting segment %d after the corruption found in segment %d", later, base)
                    _delete_segment_files(directory, later)
                _fsync_dir(directory)
                break
            if i + 1 < len(bases) and seg.recovered_bytes is not None:
                seg.seal()  # not the active one: release its files now, or a long scan runs out of them
        log = cls(directory, config, segments, remove_file=remove_file, flush_rolled_later=flush_rolled_later)
        log._recovery_point = log.log_end_offset if clean else min(checkpoint, log.log_end_offset)
        log._last_flush_ms = now
        if log_start_offset is not None:
            log._log_start_offset = min(max(log_start_offset, segments[0].base_offset), log.log_end_offset)
        log.transactions.open_indexes(log._bases)
        log._load_producer_state(now)
        if clean:
            marker.unlink()
            _fsync_dir(directory)
        logger.info("loaded %d segments (%s shutdown, %d scanned): log start %d, log end %d, recovery point %d, "
                    "%d active producers", len(segments), "clean" if clean else "unclean",
                    max(0, len(segments) - first_scanned), log.log_start_offset, log.log_end_offset,
                    log.recovery_point, len(log.producer_state.producers))
        return log

    def _load_producer_state(self, now_ms: int) -> None:
        """Newest usable snapshot plus the batches after it (Kafka's `loadProducerState`).

        Snapshots above the log end (left by a crash that lost the tail, or by a truncation)
        are deleted; a corrupt one is skipped for an older one; with none usable the whole log
        is replayed. A replay of more than nothing is saved as a snapshot at the log end, so
        the next open is quick. Also rebuilds the state after `truncate_to`.
        """
        end, start = self.log_end_offset, self.log_start_offset
        state = self.producer_state
        loaded = state.truncate_and_reload(self.directory, end, now_ms)
        if loaded is None or loaded < start:
            state.truncate_fully()
            loaded = start
        # The replayed markers index their aborts again (how .txnindex is rebuilt on recovery).
        self.transactions.retain(self._bases)
        self.transactions.truncate_indexes_to(loaded)
        replayed = 0
        for header in self.headers_from(loaded):
            if header.has_producer_id:
                self._replay(header)
                replayed += 1
        state.remove_expired(now_ms)
        self._prune_producer_state()
        if replayed:
            self._logger.info("rebuilt producer state from %d batches after offset %d", replayed, loaded)
            state.write_snapshot(self.directory, end)

    def _replay(self, header: BatchHeader) -> None:
        """Apply a batch read back from the log to the producer state (and, for a marker, the
        transaction index of its segment)."""
        if not header.is_control:
            self.producer_state.update(header, header.base_offset)
            return
        seg = self._segments[bisect_right(self._bases, header.base_offset) - 1]
        self.transactions.on_written(seg.read_bytes(header.position, header.size),
                                     replace(header, position=0), seg.base_offset)

    def headers_from(self, offset: int) -> Iterator[BatchHeader]:
        """Headers of the batches whose base offset is `offset` or later, in log order."""
        segments = self._segments
        i = max(0, bisect_right(self._bases, offset) - 1)
        for seg in segments[i:]:
            _, position = seg.index.lookup(offset) if seg.base_offset <= offset else (0, 0)
            for header in seg.iter_headers(position):
                if header.base_offset >= offset:
                    yield header

    # -- offsets ---------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        """First readable offset: at or above the first segment's base, at most the log end."""
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        return self._segments[-1].next_offset

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """The current segment snapshot, oldest first."""
        return self._segments

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def closed(self) -> bool:
        """`close` was called (or the log closed on a failure)."""
        return self._closed

    @property
    def recovery_point(self) -> int:
        """Every batch below this offset has been fsynced (Kafka's recoveryPoint).

        Moves up on each flush (and once a rolled segment is fsynced); after an
        unclean open it is the checkpoint passed to `open`, capped at the log end.
        """
        return self._recovery_point

    def flushed_bytes(self) -> dict[str, int]:
        """Bytes of each segment file (`.log`, `.index`, `.timeindex`) known to be fsynced, by path.

        A crash test may cut each file to this length to simulate losing the page cache. After
        an unclean open a scanned segment counts as fsynced only below the recovery point.
        """
        out: dict[str, int] = {}
        for s in self._segments:
            out[str(s.log_path)] = s.flushed_size
            out[str(s.index.path)], out[str(s.time_index.path)] = s.flushed_index_bytes
        return out

    # -- appending ---------------------------------------------------------------------------
    @storage_write
    def append(self, records: bytes | bytearray | memoryview, *, leader_epoch: int, max_batch_bytes: int,
               from_client: bool = True, now_ms: int | None = None) -> AppendInfo:
        """Validate, assign offsets to and write one produce request's batches.

        A writable buffer (bytearray, writable memoryview) is modified in place: its baseOffset
        and partitionLeaderEpoch fields are rewritten, and under LogAppendTime its timestamp
        type, maxTimestamp and CRC (see timestamps.py); read-only input is copied once. Refusals
        raise before anything is written (see `validate_batches`; INVALID_TIMESTAMP for CreateTime
        out of the configured bounds; CORRUPT_MESSAGE for compressed records that expand past
        `MAX_DECOMPRESSED_BATCH_BYTES`, where compaction or CreateTime bounds decode them); an
        append larger than `segment.bytes` raises RecordBatchTooLargeError (RECORD_LIST_TOO_LARGE),
        as Kafka. `now_ms` (default: the wall clock) is the append time: LogAppendTime, timestamp
        bounds and time-based rolling.
        """
        self._check_open()
        now = _now_ms() if now_ms is None else now_ms
        mv = memoryview(records)
        if mv.readonly:
            mv = memoryview(bytearray(mv))
        headers = validate_batches(mv, max_batch_bytes, from_client=from_client)
        if from_client and len(headers) != 1:
            raise InvalidRecordError(
                "Produce requests with version 3+ are only allowed to contain exactly one record batch")
        if from_client and self.config.compact:
            self._check_keys(mv, headers)
        state = self.producer_state
        if from_client and timestamps.checks_create_time(self.config):
            for h in headers:
                timestamps.check_create_times(mv, h, self.config, now)
        if from_client:
            check = state.check_append(headers[0])  # raises on a sequence gap or a stale epoch
            if check.is_duplicate:
                h = headers[0]
                self._logger.debug("duplicate batch of producer %d (epoch %d, sequence %d): already at offset %d",
                                   h.producer_id, h.producer_epoch, h.base_sequence, check.first_offset)
                return AppendInfo(base_offset=check.first_offset, last_offset=check.last_offset,
                                  max_timestamp=h.max_timestamp, batch_count=1, record_count=h.records_count,
                                  log_start_offset=self.log_start_offset, duplicate=True)
        total = len(mv)
        if total > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"Message batch size is {total} bytes in append to partition {self.directory.name}, which "
                f"exceeds the maximum configured segment size of {self.config.segment_bytes}.")
        base_offset = self.log_end_offset
        next_offset = base_offset + sum(h.last_offset_delta + 1 for h in headers)
        append_time = -1
        if from_client and self.config.log_append_time:
            append_time = now
            for h in headers:
                timestamps.set_log_append_time(mv, h, now)
        # Roll on the timestamps as stored (LogAppendTime: now), as Kafka's maybeRoll after
        # validation does, so a follower copying these batches rolls at the same place.
        max_timestamp = now if append_time >= 0 else max(h.max_timestamp for h in headers)
        active = self._maybe_roll(total, next_offset - 1, now, max_timestamp)
        assign_offsets(mv, base_offset, leader_epoch)
        written = [parse_header(mv, h.position) for h in headers]
        active.append(mv, written)
        for h in written:
            self.transactions.on_written(mv, h, active.base_offset)
        record_count = sum(h.records_count for h in headers)
        if self.log_end_offset - self._recovery_point >= self.config.flush_messages:  # Kafka's unflushedMessages
            self.flush()
        return AppendInfo(base_offset=base_offset, last_offset=next_offset - 1,
                          max_timestamp=max(h.max_timestamp for h in written), batch_count=len(headers),
                          record_count=record_count, log_append_time_ms=append_time,
                          log_start_offset=self.log_start_offset)

    def append_end_txn_marker(self, marker: EndTransactionMarker, producer_id: int, producer_epoch: int, *,
                              leader_epoch: int, now_ms: int | None = None) -> AppendInfo:
        """Write a transaction coordinator's COMMIT or ABORT marker for `producer_id` as the
        leader (Kafka's `appendAsLeader` with origin COORDINATOR): it closes the producer's
        open transaction, an abort goes to the `.txnindex`. Raises InvalidProducerEpochError
        for an epoch below the producer's, TransactionCoordinatorFencedError for an older
        coordinator epoch, before anything is written. A marker of a producer with no open
        transaction is written all the same (a retried marker), as Kafka does."""
        self._check_open()
        now = _now_ms() if now_ms is None else now_ms
        self.transactions.check_marker(producer_id, producer_epoch, marker)
        batch = encode_marker_batch(marker, producer_id, producer_epoch, now)
        return self.append(bytearray(batch), leader_epoch=leader_epoch, max_batch_bytes=len(batch),
                           from_client=False, now_ms=now)

    def last_stable_offset(self, high_watermark: int) -> int:
        """The LSO: read_committed reads stop below it (see `LogTransactions.last_stable_offset`)."""
        return self.transactions.last_stable_offset(high_watermark)

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions a read_committed fetch of [fetch_offset, upper_bound_offset)
        reports with its records (the upper bound is the read's `next_offset`)."""
        return self.transactions.aborted_txns(self._bases, fetch_offset, upper_bound_offset)

    def _check_keys(self, mv: memoryview, headers: list[BatchHeader]) -> None:
        """A compacted topic refuses a record without a key (Kafka's LogValidator), before any write."""
        for h in headers:
            if any(r.key is None for r in decode_records(mv, h.position, verify_crc=False)[1]):
                raise InvalidRecordError(
                    f"Compacted topic cannot accept message without key in topic partition {self.directory.name}.")

    def _maybe_roll(self, size: int, last_offset: int, now_ms: int, max_timestamp: int) -> LogSegment:
        """The segment to append to, rolling first when the append would not fit the active one.

        Rolls on segment.bytes, on a full index, when a relative offset would overflow int32,
        or by time (Kafka's LogSegment.shouldRoll): when the incoming max timestamp minus the
        segment's first batch's max timestamp (or, without timestamps, `now_ms` minus when the
        log first saw the segment) exceeds segment.ms less this segment's jitter; never rolls an
        empty segment.
        """
        active = self._segments[-1]
        if active.size == 0:
            return active
        if (active.size + size <= self.config.segment_bytes and not active.index_is_full
                and last_offset - active.base_offset <= _INT32_MAX
                and self._time_waited_for_roll(active, now_ms, max_timestamp)
                <= self.config.segment_ms - self._roll_jitter_ms):
            return active
        return self._roll()

    def _roll(self) -> LogSegment:
        """Seal the (non-empty) active segment and start a new one at the log end."""
        active = self._segments[-1]
        new_base = active.next_offset
        active.seal()
        rolled = None
        if self._flush_rolled_later is None:
            self._flush_upto(new_base)
        else:
            rolled = self._unflushed_segments(new_base)
        self.producer_state.write_snapshot(self.directory, new_base)
        segment = self._create_segment(new_base)
        _fsync_dir(self.directory)
        self._segments = self._segments + (segment,)
        self._bases = self._bases + (new_base,)
        self._roll_jitter_ms = self._draw_roll_jitter()
        if rolled is not None:
            # Handed over only now: the snapshot's and the directory's fsyncs above, begun
            # while the rolled segment's data is being written out, wait for it in ext4's
            # journal (measured: 120 and 164 ms of a 260 ms roll). A snapshot durable before
            # the data below it is safe: one above the log end after a crash is deleted.
            truncations = self._truncations
            self._flush_rolled_later(rolled, lambda: self._rolled_segments_flushed(new_base, truncations))
        self._logger.info("rolled new log segment at offset %d (previous segment %d bytes)", new_base, active.size)
        return segment

    def _create_segment(self, base_offset: int) -> LogSegment:
        return LogSegment.create(self.directory, base_offset, index_interval_bytes=self.config.index_interval_bytes,
                                 max_index_entries=max(1, self.config.segment_index_bytes // 8))

    def _draw_roll_jitter(self) -> int:
        """This segment's random share of segment.jitter.ms (Kafka's randomSegmentJitter)."""
        jitter = self.config.segment_jitter_ms
        return self._random.randrange(min(jitter, self.config.segment_ms)) if jitter > 0 else 0

    def _time_waited_for_roll(self, segment: LogSegment, now_ms: int, max_timestamp: int) -> int:
        """Kafka's timeWaitedForRoll: message time since the segment's first batch, else wall time
        since the log first saw the segment. The first batch's timestamp is read once and cached."""
        known = self._rolling_timestamps.get(segment.base_offset)
        if known is None:
            first = next(segment.iter_headers(0), None)
            known = (first.max_timestamp, now_ms) if first is not None else (-1, now_ms)
            self._rolling_timestamps = {segment.base_offset: known}
        first_timestamp, seen_ms = known
        if first_timestamp >= 0 and max_timestamp >= 0:
            return max_timestamp - first_timestamp
        return now_ms - seen_ms

    # -- following a leader -----------------------------------------------------------------
    @storage_write
    def append_as_follower(self, records: bytes | bytearray | memoryview, *,
                           now_ms: int | None = None) -> AppendInfo:
        """Append batches copied from the leader's log, byte for byte (Kafka's
        `UnifiedLog.appendAsFollower`).

        Nothing is rewritten: offsets, partition leader epochs, LogAppendTime stamps and
        compression stay the leader's. Refusals raise before anything is written (rules in
        follower_append.py): a batch cut short, not magic 2 or with a bad CRC
        (CorruptRecordError, InvalidRecordError); a first batch not at the log end
        (UnexpectedAppendOffsetError, carrying the append's first and last offsets); a batch
        not right after the one before (OffsetsOutOfOrderError; a compacted log may have gaps);
        a batch larger than segment.bytes (RecordBatchTooLargeError). max.message.bytes is not
        checked: the leader did (Kafka's ignoreRecordSize).

        Batches are placed one at a time by the leader's rules (`_maybe_roll`: segment.bytes, a
        full index, relative offset overflow, segment.ms by message time), as the leader
        appended them, so with the same segment config, segment.jitter.ms 0 and batches that
        carry timestamps, the follower's segment files equal the leader's byte for byte. (Kafka
        puts a whole fetch into one segment, so its followers' segment boundaries may differ.)
        Producer state gets the leader's bookkeeping without its checks (Kafka's
        AppendOrigin.REPLICATION): no duplicate or sequence refusal, the same last five
        batches per producer, so after becoming leader this log answers a retried batch with
        its original offsets. The indexes, max timestamps and flush.messages follow as for a
        leader append.

        `epoch_starts` in the result: (epoch, first offset) of the first batch and of each batch
        whose partition leader epoch differs from the one before (batches without one, -1, are
        left out). The caller passes each to `LeaderEpochCache.assign`, as Kafka assigns every
        batch's epoch. Empty `records` append nothing (batch_count 0). `now_ms` (default: the
        wall clock) is for time-based rolling.
        """
        self._check_open()
        now = _now_ms() if now_ms is None else now_ms
        mv = memoryview(records)
        if not len(mv):
            end = self.log_end_offset
            return AppendInfo(base_offset=end, last_offset=end - 1, max_timestamp=-1, batch_count=0,
                              record_count=0, log_start_offset=self.log_start_offset)
        headers = validate_batches(mv, len(mv), from_client=False)
        epoch_starts = check_follower_offsets(headers, self.log_end_offset, allow_gaps=self.config.compact,
                                              partition=self.directory.name)
        for h in headers:
            if h.size > self.config.segment_bytes:
                raise RecordBatchTooLargeError(
                    f"Message batch size is {h.size} bytes in append to partition {self.directory.name}, which "
                    f"exceeds the maximum configured segment size of {self.config.segment_bytes}.")
        for h in headers:
            active = self._maybe_roll(h.size, h.last_offset, now, h.max_timestamp)
            active.append(mv[h.position:h.position + h.size], [replace(h, position=0)])
            self.transactions.on_written(mv, h, active.base_offset)
        if self.log_end_offset - self._recovery_point >= self.config.flush_messages:
            self.flush()
        return AppendInfo(base_offset=headers[0].base_offset, last_offset=headers[-1].last_offset,
                          max_timestamp=max(h.max_timestamp for h in headers), batch_count=len(headers),
                          record_count=sum(h.records_count for h in headers),
                          log_start_offset=self.log_start_offset, epoch_starts=epoch_starts)

    @storage_write
    def truncate_to(self, target_offset: int, *, now_ms: int | None = None) -> bool:
        """Remove every batch at or after `target_offset` (Kafka's `UnifiedLog.truncateTo`): a
        follower drops its divergent tail before fetching from a new leader. False, changing
        nothing, when `target_offset` is at or past the log end.

        Batches are never split: a batch holding `target_offset` goes whole, so the log end
        becomes that batch's base offset, below `target_offset`, and the follower fetches it
        again from there. (Kafka sets its log end to `target_offset` all the same; truncation
        points from OffsetForLeaderEpoch are batch boundaries, where the two agree.)

        Segments whose base offset is above the target go; the one holding it is cut at that
        batch and becomes the active segment (empty when its base is the target, as Kafka
        keeps it); below the first segment's base the log starts afresh at the target
        (`truncate_fully_and_start_at`). Removed segments go the way retention's do: their
        files are renamed `.deleted` at once and removed after file.delete.delay.ms
        (`delete_pending_files`), so a reader holding one of their regions still finds it. The
        cut segment is cut in place. Unlike Kafka, the cut segment and the directory are
        fsynced before returning, so a crash cannot bring the removed batches back.

        Afterwards the indexes hold no entry of a removed batch, the recovery point and log
        start offset are at most the new log end, and producer state is rebuilt (Kafka's
        `rebuildProducerState`): snapshots above the new log end are deleted, the newest one
        left is loaded and the batches after it replayed (`now_ms` expires producers). The
        caller truncates its `LeaderEpochCache` at the new `log_end_offset` (also on a no-op,
        as Kafka), moves the cleaner checkpoint down to it, and persists the checkpoints.
        """
        self._check_open()
        if target_offset < 0:
            raise ValueError(f"Cannot truncate partition {self.directory.name} to a negative offset ({target_offset}).")
        end = self.log_end_offset
        if target_offset >= end:
            self._logger.info("Truncating to %d has no effect as the largest offset in the log is %d",
                              target_offset, end - 1)
            return False
        now = _now_ms() if now_ms is None else now_ms
        if self._bases[0] > target_offset:
            self.truncate_fully_and_start_at(target_offset, now_ms=now)
            return True
        keep = bisect_right(self._bases, target_offset)
        doomed = self._segments[keep:]
        self._segments, self._bases = self._segments[:keep], self._bases[:keep]
        self._mark_deleted(doomed, now, "LogTruncation")
        active = self._segments[-1]
        removed = active.truncate_to(target_offset)
        active.flush()
        _fsync_dir(self.directory)
        self._recovery_point = min(self._recovery_point, self.log_end_offset)
        self._truncations += 1
        self._log_start_offset = min(self._log_start_offset, self.log_end_offset)
        self._rolling_timestamps = {}
        self._load_producer_state(now)
        self._logger.info("Truncated to offset %d: log end offset %d (was %d), %d bytes cut from segment %d, "
                          "%d segments deleted", target_offset, self.log_end_offset, end, removed,
                          active.base_offset, len(doomed))
        return True

    @storage_write
    def truncate_fully_and_start_at(self, new_offset: int, *, now_ms: int | None = None) -> None:
        """Delete every batch and start the log afresh at `new_offset` (Kafka's
        `truncateFullyAndStartAt`): for a follower whose fetch offset is outside the leader's
        log, or `truncate_to` below this log's first segment.

        The new empty active segment is created before the old segments' files are renamed
        `.deleted` (removed after file.delete.delay.ms), so the directory is never without one;
        an old segment with the same base offset is renamed first to free its name. The log
        start offset, the recovery point and the log end become `new_offset`; every producer
        and producer snapshot is dropped. The caller clears its `LeaderEpochCache` (Kafka's
        clearAndFlush) and persists the checkpoints.
        """
        self._check_open()
        if new_offset < 0:
            raise ValueError(f"Cannot start partition {self.directory.name} at a negative offset ({new_offset}).")
        now = _now_ms() if now_ms is None else now_ms
        old = self._segments
        self._mark_deleted([s for s in old if s.base_offset == new_offset], now, "LogTruncation")
        segment = self._create_segment(new_offset)
        self._segments, self._bases = (segment,), (new_offset,)
        self._mark_deleted([s for s in old if s.base_offset != new_offset], now, "LogTruncation")
        _fsync_dir(self.directory)
        self._log_start_offset = self._recovery_point = new_offset
        self._truncations += 1
        self._rolling_timestamps = {}
        self._roll_jitter_ms = self._draw_roll_jitter()
        self.producer_state.truncate_fully(self.directory)
        self.transactions.open_indexes(self._bases)
        self._logger.info("Truncated fully and started at offset %d (%d segments deleted)", new_offset, len(old))

    # -- reading -------------------------------------------------------------------------------
    def read(self, offset: int, max_bytes: int, max_offset: int | None = None, *,
             min_one: bool = True) -> ReadResult:
        """Whole batches from the one holding `offset`, as file regions, across segments.

        Batches with base offset >= `max_offset` (the high watermark; None = log end) are left
        out. The total stays within `max_bytes` except that, with `min_one`, the first batch is
        always returned whole (Kafka's rule). `offset` == log end gives an empty result; an
        offset below the log start or past the log end raises OffsetOutOfRangeError.
        """
        segments, bases = self._segments, self._bases  # one stable snapshot
        end = segments[-1].next_offset
        start = self._log_start_offset
        if offset < start or offset > end:
            raise OffsetOutOfRangeError(
                f"Received request for offset {offset} for partition {self.directory.name}, "
                f"but we only have log segments in the range {start} to {end}.")
        regions: list[FileRegion] = []
        next_offset = offset
        budget = max_bytes
        i = max(0, bisect_right(bases, offset) - 1)
        for seg in segments[i:]:
            if max_offset is not None and next_offset >= max_offset:
                break
            got, seg_next, size = seg.read(next_offset, budget, max_offset, min_one=min_one and not regions)
            if got:
                regions.extend(got)
                next_offset = seg_next
                budget -= size
                if budget <= 0 or next_offset < seg.next_offset:
                    break  # the budget or max_offset stopped inside this segment: never skip its rest
            elif regions or (seg.size and seg.next_offset > next_offset):
                # Nothing fits the budget here, or this segment has the data but it is past max_offset.
                # (A segment emptied by the cleaner is skipped: its next_offset is only its base.)
                break
        return ReadResult(tuple(regions), next_offset)

    def committed_end(self, path: str, high_watermark: int) -> int:
        """The byte position in segment file `path` up to which it holds whole batches below
        `high_watermark`: its size once all its batches are; -1 when that is not the case or
        `path` is no segment of this log (finding the position would take a scan)."""
        for seg in reversed(self._segments):
            if str(seg.log_path) == path:
                return seg.size if seg.next_offset <= high_watermark else -1
        return -1

    def read_bytes(self, region: FileRegion) -> bytes:
        """The bytes of a region (tests, tools and callers without sendfile), found by its
        file's identity even after its segment was deleted; FileNotFoundError once it is gone."""
        return read_region(region.path, region.position, region.length, region.inode)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record whose timestamp is >= `timestamp`; None when none.

        As Kafka's LogSegment.findOffsetByTimestamp: find the first segment whose max timestamp
        reaches `timestamp`, start from its time and offset indexes, take the first batch whose
        max timestamp reaches it, and decode that batch to find the record.
        """
        for seg in self._segments:
            if seg.max_timestamp < timestamp:
                continue
            _, start_offset = seg.time_index.lookup(timestamp)
            _, position = seg.index.lookup(start_offset)
            for h in seg.iter_headers(position):
                if h.max_timestamp < timestamp:
                    continue
                _, records = decode_records(seg.read_bytes(h.position, h.size), verify_crc=False)
                for r in records:
                    if r.timestamp >= timestamp and r.offset >= self.log_start_offset:
                        return r.offset, r.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp (KIP-734); None if empty."""
        best: LogSegment | None = None
        for seg in self._segments:
            if seg.offset_of_max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        h = best.batch_at(best.offset_of_max_timestamp)
        if h is None:
            return None
        if h.timestamp_type == TimestampType.LOG_APPEND_TIME:
            return h.base_offset, h.max_timestamp
        _, records = decode_records(best.read_bytes(h.position, h.size), verify_crc=False)
        for r in records:
            if r.timestamp == h.max_timestamp:
                return r.offset, r.timestamp
        return h.last_offset, h.max_timestamp

    # -- log start offset and retention -------------------------------------------------------
    @storage_write
    def maybe_increment_log_start_offset(self, new_log_start_offset: int, high_watermark: int,
                                         reason: str) -> bool:
        """Move the log start offset up to `new_log_start_offset` (Kafka's
        `maybeIncrementLogStartOffset`); False when it is not above the current one.

        Raises OffsetOutOfRangeError above `high_watermark`: only committed records can go.
        Producers whose last batch is below it are forgotten and snapshots below it deleted.
        Segments wholly below it stay until `delete_old_segments` (or
        `delete_segments_below_log_start`) removes them.
        """
        self._check_open()
        if new_log_start_offset > high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {new_log_start_offset} of partition "
                f"{self.directory.name} since it is larger than the high watermark {high_watermark}")
        return self._increment_log_start_offset(new_log_start_offset, reason)

    def _increment_log_start_offset(self, new_log_start_offset: int, reason: str) -> bool:
        if new_log_start_offset <= self._log_start_offset:
            return False
        self._log_start_offset = new_log_start_offset
        self._logger.info("Incremented log start offset to %d due to %s", new_log_start_offset, reason)
        self._prune_producer_state()
        return True

    def _prune_producer_state(self) -> None:
        """Drop producer state and snapshots below the log start offset (Kafka's
        `onLogStartOffsetIncremented` and `deleteSnapshotsBefore`)."""
        start = self._log_start_offset
        gone = self.producer_state.on_log_start_offset(start)
        if gone:
            self._logger.info("forgot %d producers whose records are all below the log start offset %d",
                              len(gone), start)
        ProducerStateManager.delete_snapshots_before(self.directory, start)

    @storage_write
    def delete_old_segments(self, high_watermark: int, now_ms: int | None = None) -> int:
        """One retention pass (Kafka 3.9's `deleteOldSegments`); returns the segments deleted.

        Segments below the log start offset go whatever the cleanup.policy; with `delete` in
        it, then retention.bytes and retention.ms are applied (`retention.py`). Only segments
        wholly below `high_watermark` are considered.
        """
        now_ms = _now_ms() if now_ms is None else now_ms
        deleted = self.delete_segments_below_log_start(high_watermark, now_ms)
        if self.config.delete:
            deleted += self._delete_segments(
                retention.retention_size_breached(self._segments, self.config.retention_bytes, high_watermark),
                now_ms)
            deleted += self._delete_segments(
                retention.retention_ms_breached(self._segments, self.config.retention_ms, now_ms, high_watermark),
                now_ms)
        return deleted

    @storage_write
    def delete_segments_below_log_start(self, high_watermark: int, now_ms: int | None = None) -> int:
        """Delete the segments wholly below the log start offset (after DeleteRecords)."""
        plan = retention.log_start_offset_breached(self._segments, self._log_start_offset, high_watermark)
        return self._delete_segments(plan, _now_ms() if now_ms is None else now_ms)

    def _delete_segments(self, plan: retention.DeletionPlan, now_ms: int) -> int:
        """Take the planned (oldest) segments out of the segment list and mark their files
        deleted; the log start offset moves to the new first segment's base.

        When every segment is planned, a new active segment is rolled first, as Kafka does, so
        the log always keeps one. Readers holding the old tuple keep their snapshot, and their
        regions stay readable through the `.deleted` names until `delete_pending_files`.
        """
        self._check_open()
        doomed = plan.segments
        if not doomed:
            return 0
        if len(doomed) == len(self._segments):
            self._roll()
        count = len(doomed)
        self._segments = self._segments[count:]
        self._bases = self._bases[count:]
        self._mark_deleted(doomed, now_ms, plan.reason)
        _fsync_dir(self.directory)
        self._increment_log_start_offset(self._segments[0].base_offset, "SegmentDeletion")
        return count

    def _mark_deleted(self, segments: Iterable[LogSegment], now_ms: int, reason: str) -> None:
        """Rename the files of segments just taken out of the segment list to `.deleted`; they
        are removed by `delete_pending_files` after file.delete.delay.ms. The caller fsyncs the
        directory."""
        due = now_ms + self.config.file_delete_delay_ms
        for segment in segments:
            self._logger.info("Deleting segment %r due to %s", segment, reason)
            retention.mark_deleted(segment)
            self._pending_deletes.append((due, segment))

    def delete_pending_files(self, now_ms: int | None = None) -> int:
        """Remove the `.deleted` files whose file.delete.delay.ms has passed; returns how many
        segments' files were removed. The owning actor calls it periodically."""
        now_ms = _now_ms() if now_ms is None else now_ms
        due = [seg for when, seg in self._pending_deletes if when <= now_ms]
        if not due:
            return 0
        self._pending_deletes = [(when, seg) for when, seg in self._pending_deletes if when > now_ms]
        for segment in due:
            retention.delete_marked_files(segment, self._remove_file)
        self._logger.info("Deleted segment files %s", ", ".join(repr(s) for s in due))
        return len(due)

    @property
    def next_file_deletion_ms(self) -> int | None:
        """When `delete_pending_files` next has work (None: nothing pending)."""
        return min((when for when, _ in self._pending_deletes), default=None)

    # -- durability and lifecycle ------------------------------------------------------------
    @storage_write
    def flush(self, now_ms: int | None = None) -> None:
        """fsync everything up to the log end and move the recovery point there.

        Segments from the one holding the recovery point on are fsynced (after an unclean open
        that may be more than the active one; later only the active one is dirty). With `now_ms`
        it also restarts the `flush.ms` clock when anything was unflushed. Flushes that are not
        told the time (by `flush.messages` in `append`, at a roll, or without `now_ms`) leave
        that clock alone, so `maybe_flush` may flush sooner than Kafka would, never later.
        """
        self._check_open()
        self._flush_upto(self.log_end_offset, now_ms)

    @storage_write
    def maybe_flush(self, now_ms: int) -> bool:
        """Flush when there is unflushed data and `flush.ms` has passed since the last flush.

        Kafka's `LogManager.flushDirtyLogs`, run every `log.flush.scheduler.interval.ms`.
        Returns whether it flushed.
        """
        if self._closed or self.log_end_offset <= self._recovery_point:
            return False
        if now_ms - self._last_flush_ms < self.config.flush_ms:
            return False
        self._logger.debug("flushing: %d ms since the last flush, recovery point %d, log end %d",
                           now_ms - self._last_flush_ms, self._recovery_point, self.log_end_offset)
        self.flush(now_ms)
        return True

    def _flush_upto(self, offset: int, now_ms: int | None = None) -> None:
        """fsync the segments holding offsets in [recovery point, `offset`); the recovery point
        becomes `offset` if that is higher (Kafka's `UnifiedLog.flush` / `LocalLog.markFlushed`)."""
        for seg in self._unflushed_segments(offset):
            seg.flush()
        if offset > self._recovery_point:
            self._recovery_point = offset
            if now_ms is not None:
                self._last_flush_ms = now_ms

    def _unflushed_segments(self, offset: int) -> tuple[LogSegment, ...]:
        """The segments holding offsets in [recovery point, `offset`) (at least one)."""
        segments = self._segments
        first = max(0, bisect_right(self._bases, min(self._recovery_point, offset)) - 1)
        out = [segments[first]]
        for seg in segments[first + 1:]:
            if seg.base_offset >= offset:
                break
            out.append(seg)
        return tuple(out)

    def _rolled_segments_flushed(self, offset: int, truncations: int) -> None:
        """A background flush of rolled segments ended: everything below `offset` is durable,
        unless the log was closed or truncated since (the data there may be new)."""
        if not self._closed and truncations == self._truncations and offset > self._recovery_point:
            self._recovery_point = offset

    def close(self) -> None:
        """Clean shutdown: seal and flush the active segment, close files, write the marker.

        The next `open` then skips recovery. Calling it twice is harmless.
        """
        if self._closed:
            return
        if self.offline:
            self._close_offline()
            return
        active = self._segments[-1]
        try:
            active.seal()
            self.flush()
            self.producer_state.write_snapshot(self.directory, active.next_offset)
        except (KafkaStorageError, OSError) as e:
            self.mark_offline(f"closing failed: {e}")
            self._close_offline()
            return
        for seg in self._segments:
            seg.close()
        self.delete_swapped_out_segments(force=True)
        for _, seg in self._pending_deletes:  # their .deleted files go when the log is next opened
            seg.close()
        self._pending_deletes.clear()
        marker = self.directory / CLEAN_SHUTDOWN_FILE
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        _fsync_dir(self.directory)
        self._closed = True
        self._logger.info("closed cleanly at log end %d", active.next_offset)

    def _close_offline(self) -> None:
        """Close the files of an offline log without writing: no flush, no snapshot, no clean
        marker, so the next open recovers it (cutting what a failed write left half done)."""
        for seg in self._segments + tuple(s for _, s in self._pending_deletes):
            try:
                seg.close()
            except OSError as e:  # the disk that failed: what it held is recovered at the next open
                self._logger.warning("closing segment %d of an offline log: %s", seg.base_offset, e)
        self._pending_deletes.clear()
        self._closed = True
        self._logger.info("closed without flushing (offline) at log end %d", self.log_end_offset)

    # -- compaction (see cleaner.py) ------------------------------------------------------------
    def cleanable(self, now_ms: int, first_dirty_offset: int | None = None, *,
                  max_offset: int | None = None) -> CleanableInfo:
        """Dirty range and ratio for the cleaner checkpoint `first_dirty_offset` (None: none yet).

        `max_offset` is the high watermark, above which nothing is cleaned (None: log end); the
        last stable offset bounds it further, so no open transaction is cleaned (Kafka's
        `cleanableOffsets` takes the LSO as an upper bound).
        """
        max_offset = self.last_stable_offset(self.log_end_offset if max_offset is None else max_offset)
        return _cleaner.cleanable_info(self._segments, self.config, first_dirty_offset, now_ms,
                                       log_start_offset=self.log_start_offset, max_offset=max_offset,
                                       logger=self._logger)

    def start_clean(self, dedupe_buffer_bytes: int, now_ms: int, first_dirty_offset: int | None, *,
                    max_offset: int | None = None) -> LogCleaning:
        """A cleaning of the current segment snapshot. Its `run()` may go to a worker thread
        (it only reads non-active segments and writes `.cleaned` files); pass it to
        `finish_clean` on the owner's thread afterwards."""
        self._check_open()
        info = self.cleanable(now_ms, first_dirty_offset, max_offset=max_offset)
        producers = self.producer_state.producers
        last_offsets = {pid: e.last_data_offset for pid, e in producers.items() if e.last_data_offset >= 0}
        marker_epochs = {pid: e.producer_epoch for pid, e in producers.items() if e.last_data_offset < 0}
        aborted = self.aborted_transactions(self.log_start_offset, info.first_uncleanable_offset)
        return LogCleaning(self.directory, self.config, self._segments, info, dedupe_buffer_bytes=dedupe_buffer_bytes,
                           now_ms=now_ms, producer_last_offsets=last_offsets, aborted_transactions=aborted,
                           marker_producer_epochs=marker_epochs, log_start_offset=self.log_start_offset,
                           logger=self._logger)

    @storage_write
    def finish_clean(self, cleaning: LogCleaning, result: CleanResult, *, now_ms: int | None = None) -> CleanResult:
        """Swap the cleaned segments in (files first, then the segment tuple at once).

        A group whose old segments are no longer all in the log (the log was closed, truncated
        or retention removed them meanwhile) is discarded instead. The replaced segments stay
        open as `.deleted` files until `delete_swapped_out_segments` (file.delete.delay.ms).
        """
        if not result.ok:
            cleaning.discard()
            return result
        due = (_now_ms() if now_ms is None else now_ms) + self.config.file_delete_delay_ms
        for group in cleaning.groups:
            segments = self._segments
            i = next((k for k, s in enumerate(segments) if s is group.old[0]), -1)
            n = len(group.old)
            if (self._closed or i < 0 or i + n >= len(segments)
                    or any(segments[i + k] is not group.old[k] for k in range(n))):
                self._logger.warning("discarding cleaned segment %d: the log changed during cleaning",
                                     group.cleaned.base_offset)
                _cleaner.delete_segment_files([group.cleaned])
                continue
            _cleaner.swap_in(group.cleaned, group.old)
            self._segments = segments[:i] + (group.cleaned,) + segments[i + n:]
            self._bases = tuple(s.base_offset for s in self._segments)
            self._swapped_out.append((due, group.old))
        if cleaning.groups:
            self.transactions.open_indexes(self._bases)   # the cleaned segments' .txnindex
        cleaning.groups = []
        return result

    def clean(self, dedupe_buffer_bytes: int, now_ms: int, first_dirty_offset: int | None, *,
              max_offset: int | None = None) -> CleanResult:
        """One whole cleaning on this thread (Kafka's `Cleaner.clean`); see cleaner.py.

        Returns the new cleaner checkpoint in `first_dirty_offset`; on failure `error` is set
        and no file of the log has changed.
        """
        cleaning = self.start_clean(dedupe_buffer_bytes, now_ms, first_dirty_offset, max_offset=max_offset)
        return self.finish_clean(cleaning, cleaning.run(), now_ms=now_ms)

    def delete_swapped_out_segments(self, now_ms: int | None = None, *, force: bool = False) -> int:
        """Close and delete the `.deleted` files of segments replaced by cleaning whose
        file.delete.delay.ms has passed (all with `force`); returns how many segments went."""
        now = _now_ms() if now_ms is None else now_ms
        due = [segs for at, segs in self._swapped_out if force or at <= now]
        self._swapped_out = [(at, segs) for at, segs in self._swapped_out if not (force or at <= now)]
        for segs in due:
            _cleaner.delete_segment_files(segs, self._remove_file)
        return sum(len(segs) for segs in due)

    def remove_expired_producers(self, now_ms: int | None = None) -> list[int]:
        """Forget producers idle for `producer.id.expiration.ms`; returns their ids."""
        return self.producer_state.remove_expired(_now_ms() if now_ms is None else now_ms)

    # -- a failed disk (see storage_failure.py) -------------------------------------------------
    @property
    def offline(self) -> bool:
        """The log takes no writes: one failed, or its log dir was marked failed. Reads go on."""
        return self.offline_reason is not None

    def mark_offline(self, reason: str, error: BaseException | None = None) -> None:
        """Take no more writes (every write path raises KafkaStorageError from now on); logged
        once. Its log dir failed here (`error`) or under another log of the same dir."""
        if self.offline_reason is not None:
            return
        self.offline_reason = f"The log of {self.directory.name} in dir {self.directory.parent} is offline: {reason}"
        self._logger.error("%s; it takes no more writes and serves reads of what is on disk", self.offline_reason)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"log of {self.directory.name} is closed")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _durable_bytes(seg: LogSegment, recovery_point: int) -> int:
    """Bytes of a just-opened segment that the recovery point says were fsynced: its batches
    that start below `recovery_point` (a batch is written and fsynced whole, so one holding
    the recovery point was fsynced to its end)."""
    if recovery_point >= seg.next_offset:
        return seg.size
    if recovery_point <= seg.base_offset:
        return 0
    h = seg.batch_at(recovery_point)
    if h is None:
        return seg.size
    return h.position + h.size if h.base_offset < recovery_point else h.position


def _delete_segment_files(directory: Path, base_offset: int) -> None:
    """Remove one segment's `.log`, `.index`, `.timeindex` and `.txnindex` (any may be missing)."""
    stem = segment_name(base_offset)
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        (directory / (stem + suffix)).unlink(missing_ok=True)


_fsync_dir = _cleaner.fsync_dir
