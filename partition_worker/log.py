"""`PartitionLog`: the segmented log of one partition replica in `<log.dir>/<topic>-<partition>/`.

Files are Kafka's: `<20-digit base offset>.log`, `.index`, `.timeindex` per segment.
Recovery follows Kafka's UnifiedLog/LogLoader, simplified:
- the clean-shutdown marker `.kafka_cleanshutdown` lives *inside the partition directory*
  (Kafka keeps one per log dir); `close()` writes it and `open()` removes it;
- with the marker, segments are trusted and only their indexes are loaded and sanity-checked;
- without it, the last (active) segment is scanned batch by batch and truncated at the first
  invalid batch. Older segments were fsynced when they rolled, so they are only scanned when
  their index is missing or fails its sanity check (there is no recovery-point checkpoint yet).

Idempotent producers (KIP-98): the log owns a `ProducerStateManager`. Every client batch is
checked against it before it is written (duplicates are answered with their first offsets and
not written again); a snapshot `<offset>.snapshot` is written at every roll and at `close`,
and `open` loads the newest usable snapshot and replays the batches after it, as Kafka's
`UnifiedLog.loadProducerState`. Snapshots above the recovered log end are deleted first.

The log start offset is state of its own (Kafka's `logStartOffset`): DeleteRecords moves it
into the middle of a segment, retention (`retention.py`) moves it to the new first segment's
base. Reads below it fail, and producer state and snapshots below it are dropped. The caller
persists it (the log dir's `log-start-offset-checkpoint`) and passes it back to `open`.
"""
from __future__ import annotations

import logging
import os
import time
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from rafka.common.config import LogConfig
from rafka.common.errors import InvalidRecordError, OffsetOutOfRangeError, RecordBatchTooLargeError
from rafka.common.logging_util import Prefixed
from rafka.partition_worker import retention
from rafka.partition_worker.producer_state import ProducerStateManager, list_snapshots
from rafka.partition_worker.record_batch import (
    BatchHeader, TimestampType, assign_offsets, decode_records, parse_header, validate_batches,
)
from rafka.partition_worker.segment import LOG_SUFFIX, FileRegion, LogSegment
from rafka.partition_worker.segment_files import read_region

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


@dataclass(frozen=True)
class ReadResult:
    """Whole batches as file regions; `next_offset` is the offset after the last returned batch
    (the requested offset when nothing was returned)."""

    regions: tuple[FileRegion, ...]
    next_offset: int

    @property
    def size(self) -> int:
        return sum(r.length for r in self.regions)


class PartitionLog:
    """Segmented log of one replica on one disk.

    Invariants: segment base offsets strictly increase; the last segment is the active one and
    the only one appended to; `log_end_offset` is the active segment's next offset. The segment
    list is an immutable tuple replaced (never mutated) on roll, so a reader that took it keeps a
    stable snapshot. Not safe for concurrent writers: the owning actor serialises calls. Reads
    may run between appends and only ever see whole, written batches.
    """

    def __init__(self, directory: Path, config: LogConfig, segments: list[LogSegment]) -> None:
        self.directory = directory
        self.config = config
        self._segments: tuple[LogSegment, ...] = tuple(segments)
        self._bases: tuple[int, ...] = tuple(s.base_offset for s in segments)
        self._log_start_offset = segments[0].base_offset
        self._pending_deletes: list[tuple[int, LogSegment]] = []  # (due ms, segment renamed .deleted)
        self._unflushed_messages = 0
        self._closed = False
        self._logger = Prefixed(logging.getLogger(__name__),
                                f"[PartitionLog partition={directory.name}, dir={directory.parent}]")
        self.producer_state = ProducerStateManager(config.producer_id_expiration_ms)

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, directory: Path, config: LogConfig, *, now_ms: int | None = None,
             log_start_offset: int | None = None) -> "PartitionLog":
        """Open (creating if needed) the log in `directory`, recovering it after an unclean stop.

        `log_start_offset` is the persisted value (the log dir's checkpoint); it is clamped
        into [first segment's base, log end]. None: the first segment's base. Files left as
        `.deleted` by a stop before their delayed removal are removed first. `now_ms` is the
        clock for producer expiry.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        logger = Prefixed(logging.getLogger(__name__),
                          f"[PartitionLog partition={directory.name}, dir={directory.parent}]")
        marker = directory / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
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
        segments: list[LogSegment] = []
        if not bases:
            segments.append(LogSegment.create(directory, 0, **kwargs))
        for i, base in enumerate(bases):
            last = i == len(bases) - 1
            seg = LogSegment.open(directory, base, recover=last and not clean, **kwargs)
            if seg.recovered_bytes is not None:
                if seg.recovered_bytes:
                    logger.warning("recovery truncated %d bytes of segment %d; log end of segment is %d",
                                   seg.recovered_bytes, base, seg.next_offset)
                if not last:
                    seg.seal()
            segments.append(seg)
        log = cls(directory, config, segments)
        if log_start_offset is not None:
            log._log_start_offset = min(max(log_start_offset, segments[0].base_offset), log.log_end_offset)
        log._load_producer_state(now_ms if now_ms is not None else _now_ms())
        if clean:
            marker.unlink()
            _fsync_dir(directory)
        logger.info("loaded %d segments (%s shutdown): log start %d, log end %d, %d active producers",
                    len(segments), "clean" if clean else "unclean", log.log_start_offset, log.log_end_offset,
                    len(log.producer_state.producers))
        return log

    def _load_producer_state(self, now_ms: int) -> None:
        """Newest usable snapshot plus the batches after it (Kafka's `loadProducerState`).

        Snapshots above the log end (left by a crash that lost the tail) are deleted; a corrupt
        one is skipped for an older one; with none usable the whole log is replayed. A replay
        of more than nothing is saved as a snapshot at the log end, so the next open is quick.
        """
        end, start = self.log_end_offset, self.log_start_offset
        for offset, path in list_snapshots(self.directory):
            if offset > end:
                self._logger.warning("deleting producer snapshot %s above the log end %d", path.name, end)
                path.unlink(missing_ok=True)
        state = self.producer_state
        loaded = state.load_latest_snapshot(self.directory, now_ms)
        if loaded is None or loaded < start:
            state.truncate_fully()
            loaded = start
        replayed = 0
        for header in self.headers_from(loaded):
            if header.has_producer_id and not header.is_control:
                state.update(header, header.base_offset)
                replayed += 1
        state.remove_expired(now_ms)
        self._prune_producer_state()
        if replayed:
            self._logger.info("rebuilt producer state from %d batches after offset %d", replayed, loaded)
            state.write_snapshot(self.directory, end)

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
    def recovery_point(self) -> int:
        """Every batch below this offset has been fsynced (segments are fsynced when they roll)."""
        active = self._segments[-1]
        if active.flushed_size >= active.size:
            return active.next_offset
        last = active.base_offset
        for h in active.iter_headers(0, active.flushed_size):
            last = h.next_offset
        return last

    def flushed_bytes(self) -> dict[str, int]:
        """Bytes of each segment's `.log` known to be fsynced, by path.

        A crash test may cut each file to this length to simulate losing the page cache.
        """
        return {str(s.log_path): s.flushed_size for s in self._segments}

    # -- appending ---------------------------------------------------------------------------
    def append(self, records: bytes | bytearray | memoryview, *, leader_epoch: int, max_batch_bytes: int,
               from_client: bool = True) -> AppendInfo:
        """Validate, assign offsets to and write one produce request's batches.

        A writable buffer (bytearray, writable memoryview) is modified in place: its baseOffset
        and partitionLeaderEpoch fields are rewritten; read-only input is copied once. Refusals
        raise before anything is written (see `validate_batches`); an append larger than
        `segment.bytes` raises RecordBatchTooLargeError (RECORD_LIST_TOO_LARGE), as Kafka.
        """
        self._check_open()
        mv = memoryview(records)
        if mv.readonly:
            mv = memoryview(bytearray(mv))
        headers = validate_batches(mv, max_batch_bytes, from_client=from_client)
        if from_client and len(headers) != 1:
            raise InvalidRecordError(
                "Produce requests with version 3+ are only allowed to contain exactly one record batch")
        state = self.producer_state
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
        active = self._maybe_roll(total, next_offset - 1)
        assign_offsets(mv, base_offset, leader_epoch)
        written = [parse_header(mv, h.position) for h in headers]
        active.append(mv, written)
        for h in written:
            if h.has_producer_id and not h.is_control:
                state.update(h, h.base_offset)
        record_count = sum(h.records_count for h in headers)
        self._unflushed_messages += record_count
        if self._unflushed_messages >= self.config.flush_messages:
            self.flush()
        return AppendInfo(base_offset=base_offset, last_offset=next_offset - 1,
                          max_timestamp=max(h.max_timestamp for h in headers), batch_count=len(headers),
                          record_count=record_count, log_append_time_ms=-1,
                          log_start_offset=self.log_start_offset)

    def _maybe_roll(self, size: int, last_offset: int) -> LogSegment:
        """The segment to append to, rolling first when the append would not fit the active one.

        Rolls on segment.bytes, on a full index, or when a relative offset would overflow
        int32; never rolls an empty segment.
        """
        active = self._segments[-1]
        if active.size == 0:
            return active
        if (active.size + size <= self.config.segment_bytes and not active.index_is_full
                and last_offset - active.base_offset <= _INT32_MAX):
            return active
        return self._roll()

    def _roll(self) -> LogSegment:
        """Seal the (non-empty) active segment and start a new one at the log end."""
        active = self._segments[-1]
        new_base = active.next_offset
        active.seal()
        active.flush()  # Kafka flushes a rolled segment (asynchronously); here at roll time
        self.producer_state.write_snapshot(self.directory, new_base)
        segment = LogSegment.create(self.directory, new_base, index_interval_bytes=self.config.index_interval_bytes,
                                    max_index_entries=max(1, self.config.segment_index_bytes // 8))
        _fsync_dir(self.directory)
        self._segments = self._segments + (segment,)
        self._bases = self._bases + (new_base,)
        self._logger.info("rolled new log segment at offset %d (previous segment %d bytes)", new_base, active.size)
        return segment

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
                if budget <= 0:
                    break
            elif regions or seg.next_offset > next_offset:
                # Nothing fits the budget here, or this segment has the data but it is past max_offset.
                break
        return ReadResult(tuple(regions), next_offset)

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
        for segment in doomed:
            self._logger.info("Deleting segment %r due to %s", segment, plan.reason)
        self._segments = self._segments[count:]
        self._bases = self._bases[count:]
        due = now_ms + self.config.file_delete_delay_ms
        for segment in doomed:
            retention.mark_deleted(segment)
            self._pending_deletes.append((due, segment))
        _fsync_dir(self.directory)
        self._increment_log_start_offset(self._segments[0].base_offset, "SegmentDeletion")
        return count

    def delete_pending_files(self, now_ms: int | None = None) -> int:
        """Remove the `.deleted` files whose file.delete.delay.ms has passed; returns how many
        segments' files were removed. The owning actor calls it periodically."""
        now_ms = _now_ms() if now_ms is None else now_ms
        due = [seg for when, seg in self._pending_deletes if when <= now_ms]
        if not due:
            return 0
        self._pending_deletes = [(when, seg) for when, seg in self._pending_deletes if when > now_ms]
        for segment in due:
            retention.delete_marked_files(segment)
        self._logger.info("Deleted segment files %s", ", ".join(repr(s) for s in due))
        return len(due)

    @property
    def next_file_deletion_ms(self) -> int | None:
        """When `delete_pending_files` next has work (None: nothing pending)."""
        return min((when for when, _ in self._pending_deletes), default=None)

    # -- durability and lifecycle ------------------------------------------------------------
    def flush(self) -> None:
        """fsync the active segment's log and index files (older ones were fsynced on roll)."""
        self._check_open()
        self._segments[-1].flush()
        self._unflushed_messages = 0

    def close(self) -> None:
        """Clean shutdown: seal and flush the active segment, close files, write the marker.

        The next `open` then skips recovery. Calling it twice is harmless.
        """
        if self._closed:
            return
        active = self._segments[-1]
        active.seal()
        self.flush()
        self.producer_state.write_snapshot(self.directory, active.next_offset)
        for seg in self._segments:
            seg.close()
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

    def remove_expired_producers(self, now_ms: int | None = None) -> list[int]:
        """Forget producers idle for `producer.id.expiration.ms`; returns their ids."""
        return self.producer_state.remove_expired(_now_ms() if now_ms is None else now_ms)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"log of {self.directory.name} is closed")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
