"""One log segment: `<20-digit base offset>.log` with its `.index` and `.timeindex`.

The `.log` holds whole v2 record batches back to back, exactly as appended. Batches are
only ever added at the end by the owner; readers get `FileRegion`s of whole batches that
were fully written before the read began, so a region never changes under a reader.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from rafka.partition_worker.index import CorruptIndexError, OffsetIndex, TimeIndex
import crc32c as _crc32c

from rafka.partition_worker.record_batch import (
    ATTRIBUTES_OFFSET, HEADER_STRUCT, MAGIC_V2, MIN_BATCH_LENGTH, RECORD_BATCH_OVERHEAD, BatchHeader,
)

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
_SCAN_CHUNK = 1 << 20  # bytes read per pread while scanning headers or recovering


def segment_name(base_offset: int) -> str:
    """Kafka's file stem: the base offset as 20 digits."""
    return f"{base_offset:020d}"


@dataclass(frozen=True)
class FileRegion:
    """Bytes [position, position + length) of a segment file: whole batches only.

    `inode` names the file itself (0: unknown): retention renames a deleted segment to
    `<path>.deleted` and a compaction swap puts a new file at the same path, so a reader
    that opens the region later finds its file by path and inode (`segment_files.py`).
    """

    path: str
    position: int
    length: int
    inode: int = 0


class LogSegment:
    """A segment's files and what is known about them.

    Invariants: `size` is the number of valid bytes in the `.log`; `next_offset` is one past
    the last batch's last offset (the base offset when empty); index entries point below `size`.
    Not safe for concurrent writers; the owner serialises appends, truncation and recovery.
    """

    def __init__(self, directory: Path, base_offset: int, *, index_interval_bytes: int = 4096,
                 max_index_entries: int = 1 << 30) -> None:
        self.directory = Path(directory)
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        stem = segment_name(base_offset)
        self.log_path = self.directory / (stem + LOG_SUFFIX)
        self.index = OffsetIndex(self.directory / (stem + INDEX_SUFFIX), base_offset, max_index_entries)
        self.time_index = TimeIndex(self.directory / (stem + TIME_INDEX_SUFFIX), base_offset,
                                    max(1, max_index_entries * 8 // 12))
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        stat = os.fstat(self._fd)
        self.size = stat.st_size
        self.inode = stat.st_ino  # the identity regions carry (see FileRegion)
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.flushed_size = 0
        self.recovered_bytes: int | None = None
        self._bytes_since_last_index_entry = 0

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def create(cls, directory: Path, base_offset: int, *, index_interval_bytes: int = 4096,
               max_index_entries: int = 1 << 30) -> "LogSegment":
        """A new empty segment (its files are created, or emptied if they exist)."""
        seg = cls(directory, base_offset, index_interval_bytes=index_interval_bytes,
                  max_index_entries=max_index_entries)
        if seg.size:
            os.truncate(seg._fd, 0)
            seg.size = 0
        seg.index.reset()
        seg.time_index.reset()
        return seg

    @classmethod
    def open(cls, directory: Path, base_offset: int, *, index_interval_bytes: int = 4096,
             max_index_entries: int = 1 << 30, recover: bool = False) -> "LogSegment":
        """Open an existing segment.

        With `recover`, scan and validate every batch (`recover()`). Otherwise trust the
        data: load the indexes and read the tail after the last index entry; an index that
        is missing (for a non-empty log) or fails its sanity check is rebuilt by `recover()`
        all the same. `recovered_bytes` tells what recovery cut (None: no recovery ran).
        """
        seg = cls(directory, base_offset, index_interval_bytes=index_interval_bytes,
                  max_index_entries=max_index_entries)
        if recover:
            seg.recovered_bytes = seg.recover()
            return seg
        try:
            seg._load_indexes()
        except CorruptIndexError as e:
            log.warning("rebuilding the indexes of %s: %s", seg.log_path, e)
            seg.recovered_bytes = seg.recover()
        return seg

    def _load_indexes(self) -> None:
        if self.size and not (self.index.path.exists() and self.time_index.path.exists()):
            raise CorruptIndexError(f"index files of {self.log_path} are missing")
        self.index.load()
        self.index.sanity_check(self.size)
        self.time_index.load()
        # The tail after the last offset index entry tells the next offset and the latest timestamps.
        self.max_timestamp, self.offset_of_max_timestamp = self.time_index.last_entry
        if not len(self.time_index):
            self.offset_of_max_timestamp = -1
        start = self.index.last_position
        next_offset = self.base_offset
        end = start
        for h in self.iter_headers(start):
            next_offset = h.next_offset
            end = h.position + h.size
            if h.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = h.max_timestamp, h.last_offset
        if end != self.size:
            raise CorruptIndexError(f"{self.log_path} has {self.size - end} bytes after its last whole batch")
        if len(self.index) and next_offset <= self.index.last_offset:
            raise CorruptIndexError(f"index of {self.log_path} names offsets beyond the log")
        self.next_offset = next_offset
        self.time_index.sanity_check(self.next_offset)
        self._bytes_since_last_index_entry = self.size - start
        self.flushed_size = self.size

    # -- scanning --------------------------------------------------------------------
    def iter_headers(self, start: int = 0, end: int | None = None) -> Iterator[BatchHeader]:
        """Headers of the whole batches from file position `start` (positions are file positions).

        Stops at `end` (default: the current size) or at the first header that is cut short
        or names a batch running past the end. Does not check CRCs.
        """
        limit = self.size if end is None else end
        pos = start
        chunk = b""
        chunk_start = pos
        while limit - pos >= RECORD_BATCH_OVERHEAD:
            off = pos - chunk_start
            if off < 0 or off + RECORD_BATCH_OVERHEAD > len(chunk):
                chunk = os.pread(self._fd, min(_SCAN_CHUNK, limit - pos), pos)
                chunk_start, off = pos, 0
                if len(chunk) < RECORD_BATCH_OVERHEAD:
                    return
            h = BatchHeader(*HEADER_STRUCT.unpack_from(chunk, off), pos)
            if h.batch_length < MIN_BATCH_LENGTH or pos + h.size > limit:
                return
            yield h
            pos += h.size

    def batch_at(self, offset: int) -> BatchHeader | None:
        """Header of the batch holding `offset`, or of the first batch after it; None past the end."""
        _, position = self.index.lookup(offset)
        for h in self.iter_headers(position):
            if h.last_offset >= offset:
                return h
        return None

    def read_bytes(self, position: int, length: int) -> bytes:
        return os.pread(self._fd, length, position)

    # -- reading ---------------------------------------------------------------------
    def read(self, start_offset: int, max_bytes: int, max_offset: int | None = None, *,
             min_one: bool = True) -> tuple[list[FileRegion], int, int]:
        """Whole batches from the one holding `start_offset`, as merged regions.

        Includes batches whose base offset is below `max_offset` (the high watermark; None =
        no limit) while the total stays within `max_bytes`, but with `min_one` always the
        first such batch, however big (Kafka's rule, so a fetch never stalls on a large batch).
        Returns (regions, offset after the last returned batch or `start_offset`, bytes).
        """
        _, position = self.index.lookup(start_offset)
        regions: list[FileRegion] = []
        total = 0
        next_offset = start_offset
        region_start = region_end = -1
        path = str(self.log_path)
        for h in self.iter_headers(position):
            if h.last_offset < start_offset:
                continue
            if max_offset is not None and h.base_offset >= max_offset:
                break
            if total + h.size > max_bytes and (total or not min_one):
                break
            if h.position == region_end:
                region_end += h.size
            else:
                if region_start >= 0:
                    regions.append(FileRegion(path, region_start, region_end - region_start, self.inode))
                region_start, region_end = h.position, h.position + h.size
            total += h.size
            next_offset = h.next_offset
        if region_start >= 0:
            regions.append(FileRegion(path, region_start, region_end - region_start, self.inode))
        return regions, next_offset, total

    def read_regions(self, start_offset: int, max_bytes: int, max_offset: int | None = None) -> list[FileRegion]:
        """`read` without the bookkeeping: the regions only."""
        return self.read(start_offset, max_bytes, max_offset)[0]

    # -- writing ---------------------------------------------------------------------
    def append(self, data: memoryview | bytes | bytearray, headers: list[BatchHeader]) -> None:
        """Write already validated batches with assigned offsets; `headers` are theirs, in order.

        Header positions are relative to `data`. Each batch advances the index bookkeeping
        exactly as `recover()` replays it, so a rebuilt index equals the one written here.
        """
        start = self.size
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        for h in headers:
            self._track(start + h.position, h)
        self.size = start + len(data)

    def _track(self, position: int, h: BatchHeader) -> None:
        if h.max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = h.max_timestamp, h.last_offset
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.index.append(h.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += h.size
        self.next_offset = h.next_offset

    def seal(self) -> None:
        """Record the final max timestamp in the time index (on roll and close, as Kafka)."""
        if self.offset_of_max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    @property
    def index_is_full(self) -> bool:
        return self.index.is_full or self.time_index.is_full

    # -- recovery --------------------------------------------------------------------
    def recover(self) -> int:
        """Scan every batch, truncate at the first invalid one, rebuild both indexes.

        A batch is valid when its header is whole, batchLength >= 49 and fits the file, magic
        is 2, its CRC-32C matches and its offsets follow the previous batch's. Returns the
        number of bytes cut (a torn tail or garbage after a crash).
        """
        file_size = os.fstat(self._fd).st_size
        self.index.reset()
        self.time_index.reset()
        self.size = 0
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self._bytes_since_last_index_entry = 0
        pos = 0
        chunk = b""
        chunk_start = 0
        reason = "end of file"
        while pos < file_size:
            if file_size - pos < RECORD_BATCH_OVERHEAD:
                reason = f"{file_size - pos} trailing bytes are less than a batch header"
                break
            off = pos - chunk_start
            if off + RECORD_BATCH_OVERHEAD > len(chunk):
                chunk = os.pread(self._fd, min(_SCAN_CHUNK, file_size - pos), pos)
                chunk_start, off = pos, 0
            h = BatchHeader(*HEADER_STRUCT.unpack_from(chunk, off), pos)
            if h.magic != MAGIC_V2:
                reason = f"magic {h.magic}"
                break
            if h.batch_length < MIN_BATCH_LENGTH or pos + h.size > file_size:
                reason = f"batch length {h.batch_length} does not fit"
                break
            if h.base_offset < self.next_offset or h.last_offset_delta < 0:
                reason = f"base offset {h.base_offset} is below the expected {self.next_offset}"
                break
            if off + h.size > len(chunk):
                chunk = os.pread(self._fd, max(min(_SCAN_CHUNK, file_size - pos), h.size), pos)
                chunk_start, off = pos, 0
            mv = memoryview(chunk)
            if _crc32c.crc32c(mv[off + ATTRIBUTES_OFFSET:off + h.size]) != h.crc:
                reason = "CRC-32C mismatch"
                break
            self._track(pos, h)
            pos += h.size
            self.size = pos
        truncated = file_size - self.size
        if truncated:
            log.warning("truncating %d invalid bytes at position %d of %s (%s)",
                        truncated, self.size, self.log_path, reason)
            os.truncate(self._fd, self.size)
        self.flushed_size = min(self.flushed_size, self.size)
        return truncated

    # -- truncation, durability, lifecycle --------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Drop batches at or after `offset` (which must be a batch boundary or past the end).

        Returns the bytes removed. Used by follower truncation; batches are never split.
        """
        h = self.batch_at(offset)
        if h is None:
            return 0
        position = h.position if h.base_offset >= offset else h.position + h.size
        removed = self.size - position
        os.truncate(self._fd, position)
        self.index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        # Rebuild the in-memory bookkeeping from the log (cheap relative to a truncation).
        self.recover()
        return removed

    def flush(self) -> None:
        """fsync the log, then both indexes."""
        os.fsync(self._fd)
        self.flushed_size = self.size
        self.index.flush()
        self.time_index.flush()

    def close(self) -> None:
        self.index.close()
        self.time_index.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"

