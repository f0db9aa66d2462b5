"""Log compaction (`cleanup.policy=compact`): the pure core of Kafka 3.9's `LogCleaner`.

One cleaning of one log, as Kafka's `Cleaner.doClean`:

1. **Range.** The dirty section runs from the first dirty offset (the cleaner checkpoint, or
   the log start when the checkpoint is missing or out of range) to the first uncleanable
   offset: the lowest of the active segment's base, the high watermark and the base of the
   first segment holding a record newer than `min.compaction.lag.ms`, rounded down to a
   segment base (`cleanable_info`, Kafka's `cleanableOffsets` and `LogToClean`).
2. **Offset map.** The keys of the dirty segments go into an `OffsetMap` (key MD5 -> latest
   offset) segment by segment. A segment that does not fit is taken back and mapping stops
   at the segment boundary before it; when not even the first dirty segment fits the
   cleaning fails with `CleanerError` and nothing on disk changes. (Kafka 3.9 maps part of
   a segment and only refuses a map that cannot hold one entry; stopping at a segment
   boundary keeps the checkpoint a segment base.)
3. **Rewrite.** The segments from the log start to the end of the mapped range are grouped
   (`group_segments_by_size`, Kafka's `groupSegmentsBySize`) and each group is rewritten into
   one `<base>.log.cleaned` (+ `.index.cleaned`, `.timeindex.cleaned`) by `filter_batch`,
   Kafka's `MemoryRecords.filterTo` with the cleaner's `RecordFilter`.
4. **Swap** (`swap_in`, Kafka's `LocalLog.replaceSegments`): `.cleaned` -> `.swap`, the old
   segments' files -> `.deleted` (removed after `file.delete.delay.ms`), `.swap` -> final
   names. `recover_interrupted_swaps` finishes or undoes that after a crash, as Kafka's
   `LogLoader`.

Rules per batch and record (Kafka 3.9, `LogCleaner.cleanInto`/`shouldRetainRecord`):
- a record is kept when it is past the mapped range, or it has a key, its offset is at least
  the mapped offset of that key, and it has a value or is a tombstone still within its
  batch's delete horizon; keyless records are dropped (counted as invalid);
- KIP-534: a batch that keeps a tombstone and has no delete horizon yet is rewritten with
  attribute bit 6 set and baseTimestamp = now + `delete.retention.ms`; a later cleaning at
  or after that time drops its tombstones;
- a batch keeping every record and needing no horizon is copied byte for byte; otherwise the
  kept records are re-encoded with the batch's own codec, base offset, last offset delta
  (so the last sequence survives), producer id/epoch/base sequence, leader epoch and
  timestamp type, and a new CRC;
- a batch left without records is dropped, except the batch holding the last data offset
  of a producer still in the producer state: it stays as an empty batch (header only,
  recordsCount 0), so its sequence numbers survive (Kafka's `BatchRetention.RETAIN_EMPTY`);
- transactions (`cleaned_transactions.py`, Kafka's `CleanedTransactionMetadata`): the batches
  of aborted transactions (the log's `.txnindex` entries over the cleaned range) go, records
  and all, and never enter the offset map; a COMMIT or ABORT marker stays while a batch of its
  transaction remains, then gets a delete horizon and goes at a cleaning past it; the index
  entries of the aborts whose markers stay are written for the cleaned segment
  (`<base>.txnindex`, swapped in with its other files); other control batches pass through.

`LogCleaning` reads only immutable (non-active) segment files and writes only new files, so
it may run on a worker thread while the owner keeps appending; the owner swaps the result in.
"""
from __future__ import annotations

import logging
import os
import time
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from rafka.common.config import LogConfig
from rafka.common.errors import KafkaError
from rafka.partition_worker.cleaned_transactions import CleanedTransactions, discard_batch_records
from rafka.partition_worker.control_records import control_type_id
from rafka.partition_worker.file_reaper import remove_now
from rafka.partition_worker.offset_map import OffsetMap
from rafka.partition_worker.record_batch import (
    HEADER_STRUCT, MIN_BATCH_LENGTH, RECORD_BATCH_OVERHEAD, BatchHeader, Compression, Record, TimestampType,
    decode_records, encode_batch,
)
from rafka.partition_worker.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment
from rafka.partition_worker.txn_index import TXN_INDEX_SUFFIX, AbortedTxn, TransactionIndex

log = logging.getLogger(__name__)

CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"
DELETED_FILE_SUFFIX = ".deleted"
_INT32_MAX = 0x7FFFFFFF
_READ_CHUNK = 1 << 20          # bytes read at once from a source segment
_WRITE_CHUNK = 1 << 20         # kept bytes buffered before they are appended to the cleaned segment
_SEGMENT_FILE_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


class CleanerError(Exception):
    """A cleaning that cannot proceed (the dedupe buffer is too small); nothing was changed."""


@dataclass(frozen=True)
class CleanableInfo:
    """What a cleaning would cover now (Kafka's `LogToClean`).

    `clean_bytes` are the bytes of the segments below the first dirty offset, `cleanable_bytes`
    those of the segments in [first dirty, first uncleanable). `max_compaction_delay_ms` > 0
    means a dirty record is older than `max.compaction.lag.ms` by that much.
    """

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    max_compaction_delay_ms: int = 0
    checkpoint_reset: bool = False  # the given checkpoint was out of range and replaced

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def dirty_ratio(self) -> float:
        """cleanable / (clean + cleanable) bytes; 0 for an empty log."""
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def needs_compaction_now(self) -> bool:
        return self.max_compaction_delay_ms > 0

    def worth_cleaning(self, min_cleanable_ratio: float) -> bool:
        """Kafka's choice of a log to clean: a record past max.compaction.lag.ms, or a dirty
        ratio above the topic's min.cleanable.dirty.ratio."""
        return (self.needs_compaction_now and self.cleanable_bytes > 0) or self.dirty_ratio > min_cleanable_ratio


@dataclass(frozen=True)
class CleanResult:
    """The outcome of one cleaning. `first_dirty_offset` is the new cleaner checkpoint (the
    first offset not yet cleaned); on error it is the checkpoint the cleaning started from."""

    first_dirty_offset: int
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_removed: int = 0
    invalid_records: int = 0          # keyless records dropped
    segments_cleaned: int = 0
    segments_written: int = 0
    map_records_read: int = 0
    buffer_utilization: float = 0.0
    elapsed_ms: int = 0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class _Stats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_written: int = 0
    invalid_records: int = 0
    map_records_read: int = 0


@dataclass
class CleanedGroup:
    """One group of old segments and the `.cleaned` segment that replaces them."""

    old: tuple[LogSegment, ...]
    cleaned: LogSegment


# -- the range to clean --------------------------------------------------------------------

def segments_in(segments: Sequence[LogSegment], start: int, end: int) -> list[LogSegment]:
    """Segments holding offsets in [start, end): the one containing `start`, then every one
    whose base is below `end` (Kafka's `logSegments(from, to)`)."""
    if start >= end:
        return []
    bases = [s.base_offset for s in segments]
    i = max(0, bisect_right(bases, start) - 1)
    return [s for s in segments[i:] if s.base_offset < end]


def cleanable_info(segments: Sequence[LogSegment], config: LogConfig, checkpoint: int | None, now_ms: int, *,
                   log_start_offset: int | None = None, max_offset: int | None = None,
                   logger: logging.Logger | logging.LoggerAdapter = log) -> CleanableInfo:
    """The dirty range and ratio of a log whose last segment is the active one.

    `checkpoint` below the log start or past the log end is reset to the log start (Kafka
    warns and rewrites its checkpoint). `max_offset` is the high watermark (the last stable
    offset once transactions exist: `PartitionLog.cleanable` passes min(LSO, high watermark)); None
    means the log end.
    """
    active = segments[-1]
    start = segments[0].base_offset if log_start_offset is None else log_start_offset
    end = active.next_offset
    first_dirty = start if checkpoint is None else checkpoint
    reset = False
    if first_dirty < start or first_dirty > end:
        if checkpoint is not None and not (first_dirty < start and config.delete):
            logger.warning("Resetting first dirty offset to log start offset %d since the checkpointed offset "
                           "%d is invalid.", start, first_dirty)
        first_dirty, reset = start, checkpoint is not None
    candidates = [active.base_offset]
    if max_offset is not None:
        candidates.append(max_offset)
    dirty_non_active = segments_in(segments[:-1], first_dirty, active.base_offset)
    lag = max(config.min_compaction_lag_ms, 0)
    if lag > 0:
        for s in dirty_non_active:
            if s.max_timestamp > now_ms - lag:
                candidates.append(s.base_offset)
                break
    uncleanable = max(first_dirty, min(candidates))
    # Round down to the base of the segment holding it (LogToClean.firstUncleanableOffset).
    holder = segments_in(segments[:-1], uncleanable, active.base_offset)
    first_uncleanable = holder[0].base_offset if holder else active.base_offset
    clean_bytes = sum(s.size for s in segments if s.base_offset < first_dirty)
    cleanable_bytes = sum(s.size for s in segments_in(segments, first_dirty, max(first_dirty, first_uncleanable)))
    return CleanableInfo(first_dirty, first_uncleanable, clean_bytes, cleanable_bytes,
                         _max_compaction_delay(dirty_non_active, config, now_ms), reset)


def _max_compaction_delay(dirty_non_active: Sequence[LogSegment], config: LogConfig, now_ms: int) -> int:
    """How far the oldest dirty segment's first batch is past `max.compaction.lag.ms` (0: not)."""
    clean_until = now_ms - max(config.max_compaction_lag_ms, 0)
    if clean_until <= 0:  # the default (Long.MAX_VALUE) never forces a cleaning: skip reading headers
        return 0
    firsts = []
    for s in dirty_non_active:
        h = next(s.iter_headers(0), None)
        if h is not None and h.max_timestamp > 0:
            firsts.append(h.max_timestamp)
    if not firsts:
        return 0
    return max(0, clean_until - min(firsts))


def group_segments_by_size(segments: Sequence[LogSegment], max_size: int, max_index_size: int,
                           first_uncleanable_offset: int) -> list[list[LogSegment]]:
    """Consecutive groups whose log bytes stay within `max_size`, whose offset and time index
    bytes each stay within `max_index_size`, and whose offsets fit an int32 above the group's
    base (Kafka's `groupSegmentsBySize`; a segment's last offset is estimated by the next
    base, or `first_uncleanable_offset` for the last one)."""
    groups: list[list[LogSegment]] = []
    i, n = 0, len(segments)
    while i < n:
        group = [segments[i]]
        log_size, index_size, time_size = _sizes(segments[i])
        i += 1
        while i < n:
            s_log, s_index, s_time = _sizes(segments[i])
            last = segments[i + 1].base_offset - 1 if i + 1 < n else first_uncleanable_offset - 1
            if (log_size + s_log > max_size or index_size + s_index > max_index_size
                    or time_size + s_time > max_index_size or last - group[0].base_offset > _INT32_MAX):
                break
            group.append(segments[i])
            log_size, index_size, time_size = log_size + s_log, index_size + s_index, time_size + s_time
            i += 1
        groups.append(group)
    return groups


def _sizes(s: LogSegment) -> tuple[int, int, int]:
    return s.size, len(s.index) * 8, len(s.time_index) * 12


# -- reading whole batches --------------------------------------------------------------------

def iter_segment_batches(seg: LogSegment, position: int = 0, end: int | None = None
                         ) -> Iterator[tuple[BatchHeader, memoryview]]:
    """(header, bytes) of each whole batch of `seg` from file `position`, read in large chunks."""
    limit = seg.size if end is None else end
    pos = position
    while limit - pos >= RECORD_BATCH_OVERHEAD:
        chunk = memoryview(seg.read_bytes(pos, min(_READ_CHUNK, limit - pos)))
        off = 0
        while len(chunk) - off >= RECORD_BATCH_OVERHEAD:
            h = BatchHeader(*HEADER_STRUCT.unpack_from(chunk, off), pos + off)
            if h.batch_length < MIN_BATCH_LENGTH or h.position + h.size > limit:
                return
            if off + h.size > len(chunk):
                if off == 0:  # a batch larger than the chunk: read it whole
                    yield h, memoryview(seg.read_bytes(h.position, h.size))
                    off += h.size
                break
            yield h, chunk[off:off + h.size]
            off += h.size
        if off == 0:
            return
        pos += off


# -- one cleaning ---------------------------------------------------------------------------

class LogCleaning:
    """One cleaning of one log: builds the offset map and writes the `.cleaned` segments.

    Made on the owner's thread from a snapshot (segment tuple, producer last offsets); `run`
    may then run on another thread because it reads only non-active segments and writes only
    new `.cleaned` files. The owner swaps `groups` in afterwards (`swap_in`) or, if the log
    changed under it, `discard`s them.
    """

    def __init__(self, directory: Path, config: LogConfig, segments: Sequence[LogSegment],
                 info: CleanableInfo, *, dedupe_buffer_bytes: int, now_ms: int,
                 producer_last_offsets: dict[int, int], log_start_offset: int,
                 aborted_transactions: Sequence[AbortedTxn] = (),
                 marker_producer_epochs: dict[int, int] | None = None,
                 logger: logging.Logger | logging.LoggerAdapter = log) -> None:
        self.directory = Path(directory)
        self.config = config
        self.segments = tuple(segments)
        self.info = info
        self.now_ms = now_ms
        self.log_start_offset = log_start_offset
        self.dedupe_buffer_bytes = dedupe_buffer_bytes
        self._producer_last_offsets = dict(producer_last_offsets)
        self._logger = logger
        self._map: OffsetMap | None = None
        self._stats = _Stats()
        self.groups: list[CleanedGroup] = []
        self.end_offset = info.first_dirty_offset
        self._aborted = tuple(aborted_transactions)   # the log's aborts over the cleaned range
        self._txns = CleanedTransactions()
        # producers whose state holds no data batch, only an epoch from a marker: their
        # markers of that epoch stay (Kafka's `isBatchLastRecordOfProducer` for markers)
        self._marker_producers = dict(marker_producer_epochs or {})

    def _aborted_in(self, start: int, end: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [start, end) (Kafka's collectAbortedTransactions)."""
        return [t for t in self._aborted if t.last_offset >= start and t.first_offset < end]

    # -- driving -----------------------------------------------------------------------
    def run(self) -> CleanResult:
        """Map the dirty range and write the cleaned groups; never touches existing files.

        Returns the result (with `error` set on failure, after removing any `.cleaned` file).
        """
        started = time.monotonic()
        first_dirty = self.info.first_dirty_offset
        try:
            if self.info.first_uncleanable_offset <= first_dirty:
                return CleanResult(first_dirty)
            self._map = OffsetMap(self.dedupe_buffer_bytes)
            if self._map.max_entries < 1:
                raise CleanerError(
                    "offset map is too small to fit in even a single message, so log cleaning will never make "
                    "progress. You can increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads")
            self.end_offset = self._build_offset_map(first_dirty, self.info.first_uncleanable_offset)
            to_clean = segments_in(self.segments[:-1], self.log_start_offset, self.end_offset)
            self._logger.info("Cleaning log %s (cleaning prior to offset %d, %d segments)",
                              self.directory.name, self.end_offset, len(to_clean))
            for group in group_segments_by_size(to_clean, self.config.segment_bytes,
                                                self.config.segment_index_bytes, self.end_offset):
                self.groups.append(CleanedGroup(tuple(group), self._clean_group(group)))
        except Exception as e:  # noqa: BLE001 - any failure leaves the log as it was
            self.discard()
            if not isinstance(e, CleanerError):
                self._logger.exception("Unexpected exception thrown when cleaning log %s", self.directory.name)
            return CleanResult(first_dirty, error=f"{type(e).__name__}: {e}",
                               elapsed_ms=int((time.monotonic() - started) * 1000))
        st = self._stats
        return CleanResult(
            self.end_offset, bytes_read=st.bytes_read, bytes_written=st.bytes_written,
            records_read=st.records_read, records_removed=st.records_read - st.records_written,
            invalid_records=st.invalid_records, segments_cleaned=sum(len(g.old) for g in self.groups),
            segments_written=len(self.groups), map_records_read=st.map_records_read,
            buffer_utilization=self._map.utilization, elapsed_ms=int((time.monotonic() - started) * 1000))

    def discard(self) -> None:
        """Close and delete every `.cleaned` segment written so far."""
        for g in self.groups:
            _delete_segment(g.cleaned)
        self.groups = []

    # -- the offset map ------------------------------------------------------------------
    def _build_offset_map(self, start: int, end: int) -> int:
        """Map whole dirty segments from `start`; returns the end (exclusive) of the mapped range."""
        assert self._map is not None
        dirty = segments_in(self.segments[:-1], start, end)
        self._txns = CleanedTransactions()
        self._txns.add_aborted_transactions(self._aborted_in(start, end))
        mapped_end = start
        for i, seg in enumerate(dirty):
            next_base = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            if not self._map_segment(seg, start):
                self._map.rollback()
                if i == 0:
                    raise CleanerError(
                        f"Offset map of {self.dedupe_buffer_bytes} bytes can fit only {self._map.max_entries} keys, "
                        f"fewer than segment {self.directory.name}/{seg.log_path.name} holds. You can increase "
                        f"log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads")
                self._logger.debug("Offset map is full, %d segments fully mapped", i)
                break
            self._map.commit()
            self._map.latest_offset = next_base - 1
            mapped_end = next_base
        return mapped_end

    def _map_segment(self, seg: LogSegment, start: int) -> bool:
        """Put the keys of `seg` at or after `start`; False as soon as a new key does not fit."""
        assert self._map is not None
        _, position = seg.index.lookup(start) if seg.base_offset <= start else (0, 0)
        for h, data in iter_segment_batches(seg, position):
            if h.last_offset < start:
                continue
            if h.is_control:
                self._txns.on_control_batch_read(h, _control_type(data))
                continue
            if self._txns.on_batch_read(h):
                continue  # an aborted transaction's records do not count
            for r in decode_records(data, verify_crc=False)[1]:
                self._stats.map_records_read += 1
                if r.key is not None and r.offset >= start and not self._map.put(r.key, r.offset):
                    return False
        return True

    # -- rewriting ---------------------------------------------------------------------------
    def _clean_group(self, group: Sequence[LogSegment]) -> LogSegment:
        cleaned = LogSegment.create(self.directory, group[0].base_offset,
                                    index_interval_bytes=self.config.index_interval_bytes,
                                    max_index_entries=max(1, self.config.segment_index_bytes // 8),
                                    file_suffix=CLEANED_FILE_SUFFIX)
        self._txns = CleanedTransactions()
        try:
            for seg in group:
                self._txns.add_aborted_transactions(self._aborted_in(seg.base_offset, seg.next_offset))
                self._clean_into(seg, cleaned)
            if self._txns.retained_aborts:
                index = TransactionIndex(cleaned.base_offset, _txn_index_path(cleaned))
                for txn in self._txns.retained_aborts:
                    index.append(txn, fsync=True)
            cleaned.seal()
            cleaned.flush()
            mtime = os.stat(group[-1].log_path).st_mtime_ns
            os.utime(cleaned.log_path, ns=(mtime, mtime))  # Kafka keeps the last source's last-modified time
        except BaseException:
            _delete_segment(cleaned)
            raise
        return cleaned

    def _clean_into(self, source: LogSegment, dest: LogSegment) -> None:
        out = bytearray()
        headers: list[BatchHeader] = []
        for h, data in iter_segment_batches(source):
            self._stats.bytes_read += h.size
            kept = self.filter_batch(h, data)
            if kept is None:
                continue
            headers.append(BatchHeader(*HEADER_STRUCT.unpack_from(kept, 0), len(out)))
            out += kept
            if len(out) >= _WRITE_CHUNK:
                self._write(dest, out, headers)
                out, headers = bytearray(), []
        if out:
            self._write(dest, out, headers)

    def _write(self, dest: LogSegment, out: bytearray, headers: list[BatchHeader]) -> None:
        dest.append(out, headers)
        self._stats.bytes_written += len(out)

    def filter_batch(self, h: BatchHeader, data: memoryview | bytes) -> bytes | None:
        """The bytes to keep of one batch (see the module docstring), or None to drop it."""
        if h.is_control:
            return self._filter_control_batch(h, data)
        records = decode_records(data, verify_crc=False)[1]
        aborted = self._txns.on_batch_read(h)
        kept = [] if aborted else [r for r in records if self._retain(h, r)]
        self._stats.records_read += len(records)
        self._stats.records_written += len(kept)
        log_append_time = h.timestamp_type == TimestampType.LOG_APPEND_TIME
        common = dict(producer_id=h.producer_id, producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                      timestamp_type=h.timestamp_type, is_transactional=h.is_transactional,
                      partition_leader_epoch=h.partition_leader_epoch, last_offset_delta=h.last_offset_delta)
        if kept:
            needs_horizon = h.delete_horizon_ms is None and any(r.value is None for r in kept)
            if len(kept) == len(records) and not needs_horizon:
                return bytes(data)
            horizon = self.now_ms + self.config.delete_retention_ms if needs_horizon else h.delete_horizon_ms
            return encode_batch(kept, h.base_offset, compression=h.compression, delete_horizon_ms=horizon,
                                max_timestamp=h.max_timestamp if log_append_time else None, **common)
        if h.has_producer_id and self._producer_last_offsets.get(h.producer_id) == h.last_offset:
            # RETAIN_EMPTY: the last batch of an active producer keeps its sequence numbers.
            return encode_batch([], h.base_offset, compression=Compression.NONE, max_timestamp=h.max_timestamp,
                                **common)
        return None

    def _filter_control_batch(self, h: BatchHeader, data: memoryview | bytes) -> bytes | None:
        """A marker goes once its transaction has no batch left and its delete horizon has
        passed; one that may go gets a horizon first (Kafka's `containsMarkerForEmptyTxn`).
        The marker of an active producer whose state holds no data batch stays: it carries
        the producer's epoch (Kafka's `isBatchLastRecordOfProducer` for markers)."""
        self._stats.records_read += h.records_count
        can_discard = self._txns.on_control_batch_read(h, _control_type(data))
        keeps_epoch = h.has_producer_id and self._marker_producers.get(h.producer_id) == h.producer_epoch
        if discard_batch_records(h, can_discard, self.now_ms) and not keeps_epoch:
            return None
        self._stats.records_written += h.records_count
        if can_discard and h.delete_horizon_ms is None:
            _, records = decode_records(data, verify_crc=False)
            return encode_batch(records, h.base_offset, producer_id=h.producer_id, producer_epoch=h.producer_epoch,
                                base_sequence=h.base_sequence, timestamp_type=h.timestamp_type,
                                is_transactional=h.is_transactional, is_control=True,
                                partition_leader_epoch=h.partition_leader_epoch,
                                last_offset_delta=h.last_offset_delta, max_timestamp=h.max_timestamp,
                                delete_horizon_ms=self.now_ms + self.config.delete_retention_ms)
        return bytes(data)

    def _retain(self, h: BatchHeader, r: Record) -> bool:
        assert self._map is not None
        if r.offset > self._map.latest_offset:
            return True
        if r.key is None:
            self._stats.invalid_records += 1
            return False
        if r.offset < self._map.get(r.key):
            return False
        if r.value is not None:
            return True
        horizon = h.delete_horizon_ms
        return horizon is None or self.now_ms < horizon


# -- files ------------------------------------------------------------------------------------

def _txn_index_path(seg: LogSegment) -> Path:
    """The segment's `.txnindex` under the same suffix as its `.log` (`.cleaned`, `.deleted`...)."""
    return seg.log_path.with_name(seg.log_path.name.replace(LOG_SUFFIX, TXN_INDEX_SUFFIX, 1))


def _rename_txn_index(seg: LogSegment, old_suffix: str, new_suffix: str) -> None:
    """Rename a segment's `.txnindex` as `change_file_suffixes` renames its other files
    (called right after it, so `log_path` already has `new_suffix`); none is no error."""
    target = _txn_index_path(seg)
    source = target.with_name(target.name[:len(target.name) - len(new_suffix)] + old_suffix)
    try:
        os.rename(source, target)
    except FileNotFoundError:
        pass


def _delete_segment(seg: LogSegment, remove: Callable[[str], None] = remove_now) -> None:
    seg.close()
    for path in (seg.log_path, seg.index.path, seg.time_index.path, _txn_index_path(seg)):
        remove(str(path))


def _control_type(data: memoryview | bytes) -> int | None:
    """The control type of a control batch's first record; None for an empty batch or an
    unreadable key (kept as it is)."""
    _, records = decode_records(data, verify_crc=False)
    if not records:
        return None
    try:
        return control_type_id(records[0].key)
    except KafkaError:
        return -1


def swap_in(cleaned: LogSegment, old: Sequence[LogSegment]) -> None:
    """Replace `old` segments' files by `cleaned`'s, crash-safely (Kafka's `replaceSegments`).

    `.cleaned` -> `.swap` (log first), each old segment's files -> `.deleted`, `.swap` -> the
    final names, then fsync the directory. The old segments stay open: readers holding them
    keep reading their bytes until `delete_segment_files`.
    """
    cleaned.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)
    _rename_txn_index(cleaned, CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)
    for seg in old:
        seg.change_file_suffixes("", DELETED_FILE_SUFFIX)
        _rename_txn_index(seg, "", DELETED_FILE_SUFFIX)
    cleaned.change_file_suffixes(SWAP_FILE_SUFFIX, "")
    _rename_txn_index(cleaned, SWAP_FILE_SUFFIX, "")
    fsync_dir(cleaned.directory)


def delete_segment_files(segments: Sequence[LogSegment], remove: Callable[[str], None] = remove_now) -> None:
    """Close segments swapped out by a cleaning and `remove` their `.deleted` files."""
    for seg in segments:
        _delete_segment(seg, remove)


def _offset_of(name: str) -> int | None:
    stem = name.split(".", 1)[0]
    return int(stem) if stem.isdigit() else None


def recover_interrupted_swaps(directory: Path, logger: logging.Logger | logging.LoggerAdapter = log) -> None:
    """Finish or undo a cleaning interrupted by a crash, before the segments are opened.

    Kafka's `LogLoader` rules: `.deleted` files go; `.swap` files whose base offset is at or
    above the lowest `.cleaned` one belong to a swap that had not finished renaming and go,
    as does every `.cleaned` file; each remaining `.log.swap` replaces the segment files
    whose base offset lies in [its base, its next offset), then every `.swap` is renamed.
    """
    directory = Path(directory)
    cleaned, swaps = [], []
    for p in directory.iterdir():
        if not p.is_file() or _offset_of(p.name) is None:
            continue
        if p.name.endswith(DELETED_FILE_SUFFIX):
            logger.info("Deleting stray temporary file %s", p.name)
            p.unlink()
        elif p.name.endswith(CLEANED_FILE_SUFFIX):
            cleaned.append(p)
        elif p.name.endswith(SWAP_FILE_SUFFIX):
            swaps.append(p)
    min_cleaned = min((_offset_of(p.name) for p in cleaned), default=None)
    valid = []
    for p in swaps:
        if min_cleaned is not None and _offset_of(p.name) >= min_cleaned:
            logger.info("Deleting invalid swap file %s (minimum cleaned file offset %d)", p.name, min_cleaned)
            p.unlink()
        else:
            valid.append(p)
    for p in cleaned:
        logger.info("Deleting stray cleaned file %s", p.name)
        p.unlink()
    low, high = None, None
    for p in valid:
        if p.name.endswith(LOG_SUFFIX + SWAP_FILE_SUFFIX):
            base = _offset_of(p.name)
            seg = LogSegment(directory, base, file_suffix=SWAP_FILE_SUFFIX)
            try:
                next_offset = base
                for h, _ in iter_segment_batches(seg):
                    next_offset = h.next_offset
            finally:
                seg.close()
            logger.info("Found log file %s from interrupted swap operation, which is recoverable by renaming",
                        p.name)
            low = base if low is None else min(low, base)
            high = next_offset if high is None else max(high, next_offset)
    if low is not None:
        for p in directory.iterdir():
            offset = _offset_of(p.name)
            if (offset is not None and low <= offset < high and p.name.endswith(_SEGMENT_FILE_SUFFIXES)):
                logger.info("Deleting segment file %s that is compacted but has not been deleted yet", p.name)
                p.unlink()
    for p in valid:
        os.rename(p, p.with_name(p.name[:-len(SWAP_FILE_SUFFIX)]))
    if swaps or cleaned:
        fsync_dir(directory)


def fsync_dir(directory: Path) -> None:
    """fsync a directory, so renames and new files in it survive a crash."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = [
    "CLEANED_FILE_SUFFIX", "DELETED_FILE_SUFFIX", "SWAP_FILE_SUFFIX", "CleanResult", "CleanableInfo",
    "CleanedGroup", "CleanerError", "LogCleaning", "cleanable_info", "delete_segment_files", "fsync_dir",
    "group_segments_by_size", "iter_segment_batches", "recover_interrupted_swaps", "segments_in", "swap_in",
]
