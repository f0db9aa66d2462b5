"""One log segment: `<20-digit base offset>.log` with its `.index` and `.timeindex`.

The `.log` holds whole v2 record batches back to back, exactly as appended. Batches are
only ever added at the end by the owner; readers get `FileRegion`s of whole batches that
were fully written before the read began, so a region never changes under a reader.

Open files: a segment being appended to (the active one) holds its `.log` open for writing
and its two indexes open and preallocated. Once sealed (rolled) or closed it holds no file:
its `.log` is opened on demand through the process-wide `SegmentFileCache` (bounded LRU,
see file_cache.py) and its indexes are in memory. So a log with thousands of segments needs
a handful of descriptors, whatever its size.
"""
from __future__ import annotations

import errno
import logging
import os
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from rafka.partition_worker.file_cache import Borrowed, SegmentFileCache, shared_cache
from rafka.partition_worker.index import DEFAULT_INDEX_BYTES, CorruptIndexError, OffsetIndex, TimeIndex
import crc32c as _crc32c

from rafka.partition_worker.record_batch import (
    ATTRIBUTES_OFFSET, HEADER_STRUCT, MAGIC_V2, MIN_BATCH_LENGTH, RECORD_BATCH_OVERHEAD, BatchHeader,
)

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
_SCAN_CHUNK = 1 << 20  # bytes read per pread while recovering (every byte is checksummed)
# Bytes read per pread while walking headers only: enough for many small batches at once, while
# a big batch costs one small read of its header rather than a copy of its records.
_HEADER_CHUNK = 32 << 10
# Batches appended last whose positions a segment keeps (see `LogSegment._recent`).
RECENT_BATCHES = 64


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
    # The file's identity, which a reader checks (a swap or a rename may reuse the name); not part of equality.
    inode: int = field(default=0, compare=False)


def iter_headers(pread: Callable[[int, int], bytes], start: int, limit: int) -> Iterator[BatchHeader]:
    """Headers of the whole batches of a segment file from position `start` up to `limit`,
    read with `pread(size, position)` a chunk at a time.

    Stops at the first header that is cut short or names a batch running past `limit`. Does
    not check CRCs. Shared by the replica's segments and the front end's reads of committed
    bytes (`net/data_plane.py`).
    """
    pos = start
    chunk = b""
    chunk_start = pos
    while limit - pos >= RECORD_BATCH_OVERHEAD:
        off = pos - chunk_start
        if off + RECORD_BATCH_OVERHEAD > len(chunk):  # the next header is not in the chunk
            chunk = pread(min(_HEADER_CHUNK, limit - pos), pos)
            chunk_start, off = pos, 0
            if len(chunk) < RECORD_BATCH_OVERHEAD:
                return
        h = BatchHeader(*HEADER_STRUCT.unpack_from(chunk, off), pos)
        if h.batch_length < MIN_BATCH_LENGTH or pos + h.size > limit:
            return
        yield h
        pos += h.size


class LogSegment:
    """A segment's files and what is known about them.

    Invariants: `size` is the number of valid bytes in the `.log`; `next_offset` is one past
    the last batch's last offset (the base offset when empty); index entries point below `size`.
    Not safe for concurrent writers; the owner serialises appends, truncation and recovery.

    File descriptors: `append` opens the `.log` for writing and preallocates both indexes
    (Kafka resizes the active segment's indexes to segment.index.bytes); `seal` (on roll) and
    `close` trim the indexes to their entries and release those files. Reads of a segment
    without its writer go through `file_cache` (default: the process-wide one), reopening the
    file if it was evicted. After `close` nothing reopens it: reads raise OSError(EBADF).
    """

    def __init__(self, directory: Path, base_offset: int, *, index_interval_bytes: int = 4096,
                 max_index_entries: int = DEFAULT_INDEX_BYTES // 8,
                 file_cache: SegmentFileCache | None = None, file_suffix: str = "") -> None:
        self.directory = Path(directory)
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        stem = segment_name(base_offset)
        self.log_path = self.directory / (stem + LOG_SUFFIX + file_suffix)
        self.index = OffsetIndex(self.directory / (stem + INDEX_SUFFIX + file_suffix), base_offset, max_index_entries)
        self.time_index = TimeIndex(self.directory / (stem + TIME_INDEX_SUFFIX + file_suffix), base_offset,
                                    max(1, max_index_entries * 8 // 12))
        self._files = shared_cache() if file_cache is None else file_cache
        self._write_fd = -1  # the `.log` open for appending while this segment is active
        self._inode: int | None = None
        self._closed = False
        try:
            self.size = os.stat(self.log_path).st_size
        except FileNotFoundError:
            os.close(os.open(self.log_path, os.O_WRONLY | os.O_CREAT, 0o644))
            self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.flushed_size = 0
        self.flushed_index_bytes = (0, 0)  # fsynced lengths of the .index and .timeindex
        self.recovered_bytes: int | None = None
        self._bytes_since_last_index_entry = 0
        # Where the batches appended last start (base offset -> position): a consumer at the
        # end of the log reads from one of them, and finding it through the sparse index meant
        # walking up to index.interval.bytes of headers first (~24 at 170-byte batches).
        self._recent: dict[int, int] = {}
        # The last append, while it is the segment's end: (base offset, position, bytes, batches).
        # A consumer or follower waiting at the log end reads exactly it next: it is answered
        # without a header walk or a `pread`.
        self._tail: tuple[int, int, int, int] | None = None

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def create(cls, directory: Path, base_offset: int, *, index_interval_bytes: int = 4096,
               max_index_entries: int = DEFAULT_INDEX_BYTES // 8,
               file_cache: SegmentFileCache | None = None, file_suffix: str = "") -> "LogSegment":
        """A new empty active segment (its files are created, or emptied if they exist); its
        indexes are preallocated. `file_suffix` is appended to every file name: the log cleaner
        writes `.cleaned` segments."""
        seg = cls(directory, base_offset, index_interval_bytes=index_interval_bytes,
                  max_index_entries=max_index_entries, file_cache=file_cache, file_suffix=file_suffix)
        fd = seg._writer()
        if seg.size:
            os.ftruncate(fd, 0)
            seg.size = 0
        seg.index.reset()
        seg.time_index.reset()
        return seg

    @classmethod
    def open(cls, directory: Path, base_offset: int, *, index_interval_bytes: int = 4096,
             max_index_entries: int = DEFAULT_INDEX_BYTES // 8, recover: bool = False,
             file_cache: SegmentFileCache | None = None, read_only: bool = False) -> "LogSegment":
        """Open an existing segment.

        With `recover`, scan and validate every batch (`recover()`). Otherwise trust the
        data: load the indexes and read the tail after the last index entry; an index that
        is missing (for a non-empty log) or fails its sanity check is rebuilt by `recover()`
        all the same. `recovered_bytes` tells what recovery cut (None: no recovery ran).
        With `read_only` (a reader that is not the log's owner) nothing is written: a missing
        file raises FileNotFoundError and an index that fails its checks CorruptIndexError.
        """
        if read_only and not (Path(directory) / (segment_name(base_offset) + LOG_SUFFIX)).exists():
            raise FileNotFoundError(f"segment {base_offset} of {directory} is gone")
        seg = cls(directory, base_offset, index_interval_bytes=index_interval_bytes,
                  max_index_entries=max_index_entries, file_cache=file_cache)
        if read_only:
            seg._load_indexes()
            return seg
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
        end, next_offset = self._read_tail()
        if end != self.size:
            raise CorruptIndexError(f"{self.log_path} has {self.size - end} bytes after its last whole batch")
        if len(self.index) and next_offset <= self.index.last_offset:
            raise CorruptIndexError(f"index of {self.log_path} names offsets beyond the log")
        self.next_offset = next_offset
        self.time_index.sanity_check(self.next_offset)
        self.flushed_size = self.size
        self.flushed_index_bytes = self._index_bytes()

    def _read_tail(self) -> tuple[int, int]:
        """The latest timestamps and the index bookkeeping from the last index entries and the
        batches after the last offset index entry (Kafka reads the same tail); returns where
        those whole batches end and the offset after them. Leaves `next_offset` to the caller."""
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
        self._bytes_since_last_index_entry = self.size - start
        return end, next_offset

    # -- scanning --------------------------------------------------------------------
    def iter_headers(self, start: int = 0, end: int | None = None) -> Iterator[BatchHeader]:
        """Headers of the whole batches from file position `start` (positions are file positions).

        Stops at `end` (default: the current size) or at the first header that is cut short
        or names a batch running past the end. Does not check CRCs.
        """
        return iter_headers(self._pread, start, self.size if end is None else end)

    def _pread(self, size: int, position: int) -> bytes:
        with self._file() as fd:  # not held across yields: the cache may evict it
            return os.pread(fd, size, position)

    def batch_at(self, offset: int) -> BatchHeader | None:
        """Header of the batch holding `offset`, or of the first batch after it; None past the end."""
        _, position = self.index.lookup(offset)
        for h in self.iter_headers(position):
            if h.last_offset >= offset:
                return h
        return None

    def read_bytes(self, position: int, length: int) -> bytes:
        with self._file() as fd:
            return os.pread(fd, length, position)

    def _file(self) -> Borrowed | nullcontext[int]:
        """`with self._file() as fd`: the `.log`, from the writer or the cache (reopened if evicted)."""
        if self._write_fd >= 0:
            return nullcontext(self._write_fd)
        if self._closed:
            raise OSError(errno.EBADF, f"segment {self.log_path} is closed")
        return self._files.borrow(self, self.log_path)

    def _writer(self) -> int:
        """The `.log` open for appending; opening it makes this the active segment: the cached
        descriptor is dropped and both indexes are preallocated."""
        if self._write_fd < 0:
            if self._closed:
                raise OSError(errno.EBADF, f"segment {self.log_path} is closed")
            self._write_fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            self._files.drop(self)
            self.index.preallocate()
            self.time_index.preallocate()
        return self._write_fd

    # -- reading ---------------------------------------------------------------------
    def read(self, start_offset: int, max_bytes: int, max_offset: int | None = None, *,
             min_one: bool = True) -> tuple[list[FileRegion], int, int]:
        """Whole batches from the one holding `start_offset`, as merged regions.

        Includes batches whose base offset is below `max_offset` (the high watermark; None =
        no limit) while the total stays within `max_bytes`, but with `min_one` always the
        first such batch, however big (Kafka's rule, so a fetch never stalls on a large batch).
        Returns (regions, offset after the last returned batch or `start_offset`, bytes).
        """
        tail = self._tail
        if (tail is not None and start_offset == tail[0] and (max_offset is None or max_offset >= self.next_offset)
                and (tail[2] <= max_bytes or (min_one and tail[3] == 1))):
            return [FileRegion(str(self.log_path), tail[1], tail[2], self.inode)], self.next_offset, tail[2]
        position = self._recent.get(start_offset)
        if position is None:
            _, position = self.index.lookup(start_offset)
        regions: list[FileRegion] = []
        total = 0
        next_offset = start_offset
        region_start = region_end = -1
        path, inode = str(self.log_path), self.inode
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
                    regions.append(FileRegion(path, region_start, region_end - region_start, inode))
                region_start, region_end = h.position, h.position + h.size
            total += h.size
            next_offset = h.next_offset
        if region_start >= 0:
            regions.append(FileRegion(path, region_start, region_end - region_start, inode))
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
        fd = self._writer()
        view = memoryview(data)
        before = (self.next_offset, self.max_timestamp, self.offset_of_max_timestamp,
                  self._bytes_since_last_index_entry)
        try:
            while view:
                view = view[os.write(fd, view):]
            for h in headers:
                self._track(start + h.position, h)
        except OSError:
            # A full or failing disk: leave the segment as it was before this append, so reads
            # keep to whole batches (the log then goes offline; see storage_failure.py).
            (self.next_offset, self.max_timestamp, self.offset_of_max_timestamp,
             self._bytes_since_last_index_entry) = before
            if len(self.index) and self.index.last_offset >= self.next_offset:
                self.index.truncate_to(self.next_offset)
            if len(self.time_index) and self.time_index.last_entry[1] >= self.next_offset:
                self.time_index.truncate_to(self.next_offset)
            os.ftruncate(fd, start)  # frees blocks, so it works on a full disk
            self._forget_recent()
            raise
        self.size = start + len(data)
        self._tail = (headers[0].base_offset, start, len(data), len(headers)) if headers else None

    def _forget_recent(self) -> None:
        """The batches appended last are gone or moved (truncation, recovery, a failed write)."""
        self._recent.clear()
        self._tail = None

    def _track(self, position: int, h: BatchHeader) -> None:
        if h.max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = h.max_timestamp, h.last_offset
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.index.append(h.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += h.size
        self.next_offset = h.next_offset
        self._recent[h.base_offset] = position
        if len(self._recent) > RECENT_BATCHES:
            del self._recent[next(iter(self._recent))]   # the oldest

    def seal(self) -> None:
        """This segment stops being active (on roll and close; Kafka's onBecomeInactiveSegment).

        Records the final max timestamp in the time index, trims both indexes to their entries
        and releases the files; later reads go through the file cache. Appending again
        reopens them. Does not fsync: `flush()` after it does.
        """
        if self.offset_of_max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self._release_writer()

    def _release_writer(self) -> None:
        if self._write_fd >= 0:
            fd, self._write_fd = self._write_fd, -1
            os.close(fd)

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename the log, then the offset index, then the time index from `old_suffix` to
        `new_suffix` (Kafka's `LogSegment.changeFileSuffixes`; the order matters to recovery).

        Open descriptors stay valid, and a reopen after a cache eviction uses the new name, so
        readers holding this segment keep reading its bytes. A missing file is skipped.
        """
        for holder in (self, self.index, self.time_index):
            path = holder.log_path if holder is self else holder.path
            name = path.name
            if old_suffix and not name.endswith(old_suffix):
                raise ValueError(f"{path} does not end with {old_suffix!r}")
            target = path.with_name(name[:len(name) - len(old_suffix)] + new_suffix)
            try:
                os.rename(path, target)
            except FileNotFoundError:
                pass
            if holder is self:
                self.log_path = target
            else:
                holder.path = target

    @property
    def inode(self) -> int:
        """The `.log` file's inode, read once: renames (`.deleted`, `.swap`) keep it, a new file does not."""
        if self._inode is None:
            with self._file() as fd:
                self._inode = os.fstat(fd).st_ino
        return self._inode

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
        with self._file() as fd:
            return self._recover(fd)

    def _recover(self, fd: int) -> int:
        file_size = os.fstat(fd).st_size
        self.index.reset()
        self.time_index.reset()
        self._forget_recent()
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
                chunk = os.pread(fd, min(_SCAN_CHUNK, file_size - pos), pos)
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
                chunk = os.pread(fd, max(min(_SCAN_CHUNK, file_size - pos), h.size), pos)
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
            os.ftruncate(fd, self.size)
        self.flushed_size = min(self.flushed_size, self.size)
        self.flushed_index_bytes = (0, 0)  # both indexes were rewritten
        return truncated

    # -- truncation, durability, lifecycle --------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is at or after `offset`; returns the bytes removed
        (0 when no batch reaches `offset`).

        As Kafka's `LogSegment.truncateTo`, batches are never split: the one holding `offset`
        goes whole, so `next_offset` becomes its base offset, which may be below `offset`. The
        segment becomes the active one (its `.log` opens for writing and both indexes are
        preallocated again, Kafka's resize to maxIndexSize); index entries of removed batches
        go, and the next offset, max timestamp and index bookkeeping are re-read from the tail
        after the last index entry, as `open` does, not by a scan of the whole segment. Does
        not fsync: `flush()` after it does.
        """
        h = self.batch_at(offset)
        if h is None:
            return 0
        removed = self.size - h.position
        self._forget_recent()
        os.ftruncate(self._writer(), h.position)
        self.size = h.position
        # Entries are keyed by the last offset of a batch (offset index) or of the batch holding
        # the max timestamp (time index): every entry of a removed batch is at or above its base.
        self.index.truncate_to(h.base_offset)
        self.time_index.truncate_to(h.base_offset)
        _, self.next_offset = self._read_tail()
        self.flushed_size = min(self.flushed_size, self.size)
        self.flushed_index_bytes = tuple(min(flushed, now) for flushed, now in
                                         zip(self.flushed_index_bytes, self._index_bytes()))
        return removed

    def flush(self) -> None:
        """fsync the log, then both indexes."""
        with self._file() as fd:
            os.fsync(fd)
        self.flushed_size = self.size
        self.index.flush()
        self.time_index.flush()
        self.flushed_index_bytes = self._index_bytes()

    def _index_bytes(self) -> tuple[int, int]:
        return len(self.index) * self.index.ENTRY_SIZE, len(self.time_index) * self.time_index.ENTRY_SIZE

    def close(self) -> None:
        """Trim the indexes, close every file and forget the cached one; nothing reopens them."""
        self.index.close()
        self.time_index.close()
        self._release_writer()
        self._files.drop(self)
        self._closed = True

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"

