"""Kafka's sparse segment indexes: `.index` (offset → file position) and `.timeindex`.

`.index`: 8-byte entries, relative offset (int32 BE, offset - segment base) then file
position (int32 BE). The log adds one every `index.interval.bytes` of appended batches,
keyed by the batch's *last* offset and the position where that batch starts (as Kafka's
LogSegment.append), so `lookup(t)` gives a position at or before the batch holding `t`.

`.timeindex`: 12-byte entries, timestamp (int64 BE) then relative offset (int32 BE), added
only when the segment's max timestamp so far grows: all records at or before that offset
have timestamps at most that value.

Entries live in memory (`array`); each is also written to the file at its place, entry n at
byte n * entry size. As Kafka (AbstractIndex), an index being appended to is preallocated:
when its writer opens (a new or re-activated segment) the file is extended to its maximum
size, `max_entries` entries (segment.index.bytes rounded down to whole entries), as a sparse
file of zeros. `trim_to_valid_size()` (on roll) and `close()` cut it back to exactly its
entries, as Kafka leaves it after a clean shutdown; after an unclean stop the zero tail is
still there and `load()` ends the entries at it. Files are not memory-mapped. Only an index
with an open writer holds a file descriptor.
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
import struct
from array import array
from bisect import bisect_right
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_ZERO_TIME_ENTRY = bytes(_TIME_ENTRY.size)
DEFAULT_INDEX_BYTES = 10 * 1024 * 1024  # Kafka's segment.index.bytes default


class CorruptIndexError(Exception):
    """An index file that fails its sanity check; the segment rebuilds it from the log.

    Internal to the storage engine: it never leaves `PartitionLog.open`.
    """


class _IndexFile(ABC):
    """The file side of an index: entries written in place, preallocation, trimming, fsync.
    Subclasses hold the entries and say how many there are."""

    ENTRY_SIZE = 8

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self.max_entries = max_entries
        self._fd: int | None = None
        self._dirty = False  # written or resized since the last fsync

    @abstractmethod
    def __len__(self) -> int:
        """The number of entries."""

    @property
    def is_full(self) -> bool:
        """No room for another entry in the preallocated file (Kafka: entries >= maxEntries)."""
        return len(self) >= self.max_entries

    @property
    def preallocated_bytes(self) -> int:
        """Size of the file while it is being appended to: `max_entries` whole entries."""
        return self.max_entries * self.ENTRY_SIZE

    def preallocate(self) -> None:
        """Open the writer, extending the file to `preallocated_bytes` (zeros after the entries)."""
        self._writer()

    def trim_to_valid_size(self) -> None:
        """Cut the file to exactly its entries and close the writer (Kafka's trimToValidSize, on roll)."""
        if self._fd is not None:
            os.ftruncate(self._fd, len(self) * self.ENTRY_SIZE)
            self._dirty = True
            os.close(self._fd)
            self._fd = None

    def flush(self) -> None:
        """fsync the file if it changed since the last flush (also after the writer closed)."""
        if not self._dirty:
            return
        if self._fd is not None:
            os.fsync(self._fd)
        else:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._dirty = False

    def close(self) -> None:
        """Trim to the entries and release the file (Kafka's AbstractIndex.close)."""
        self.trim_to_valid_size()

    def _write_entry(self, n: int, entry: bytes) -> None:
        fd = self._writer()
        if os.pwrite(fd, entry, n * self.ENTRY_SIZE) != len(entry):
            raise OSError(f"short write to index file {self.path}")
        self._dirty = True

    def _truncate_file(self, keep: int) -> None:
        """Zero the file after `keep` entries, keeping it preallocated."""
        fd = self._writer()
        os.ftruncate(fd, keep * self.ENTRY_SIZE)
        os.ftruncate(fd, max(self.preallocated_bytes, keep * self.ENTRY_SIZE))
        self._dirty = True

    def _writer(self) -> int:
        if self._fd is None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                # Whatever lies after the entries (a stale zero tail, a torn entry) becomes zeros.
                valid = len(self) * self.ENTRY_SIZE
                os.ftruncate(fd, valid)
                os.ftruncate(fd, max(self.preallocated_bytes, valid))
            except OSError:
                os.close(fd)
                raise
            self._fd = fd
            self._dirty = True
        return self._fd


class OffsetIndex(_IndexFile):
    """The `.index` of one segment: relative offsets and positions both strictly increase."""

    ENTRY_SIZE = 8

    def __init__(self, path: Path, base_offset: int, max_entries: int = DEFAULT_INDEX_BYTES // 8) -> None:
        super().__init__(path, base_offset, max_entries)
        self._relative = array("q")
        self._positions = array("q")

    # -- loading ---------------------------------------------------------------------
    def load(self) -> None:
        """Read the file (missing = empty); CorruptIndexError if its size or order is wrong."""
        self._relative, self._positions = array("q"), array("q")
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        if len(data) % self.ENTRY_SIZE:
            raise CorruptIndexError(f"index file {self.path} has size {len(data)}, not a multiple of 8")
        last_rel = last_pos = -1
        for rel, pos in _OFFSET_ENTRY.iter_unpack(data):
            if rel == 0 and pos == 0:
                # Zero tail of a preallocated index: the entries end here. No real entry is
                # (0, 0): the first batch of a segment is never indexed (Kafka's rule too).
                break
            if rel <= last_rel or pos <= last_pos or rel < 0 or pos < 0:
                raise CorruptIndexError(f"index file {self.path} is not increasing at entry {len(self._relative)}")
            self._relative.append(rel)
            self._positions.append(pos)
            last_rel, last_pos = rel, pos

    def sanity_check(self, log_size: int) -> None:
        """CorruptIndexError if the last entry points at or past the end of the log."""
        if self._positions and self._positions[-1] >= log_size:
            raise CorruptIndexError(
                f"index file {self.path} points at position {self._positions[-1]} beyond the log's {log_size} bytes")

    # -- queries ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._relative)

    @property
    def last_offset(self) -> int:
        """Offset of the last entry, or the base offset when empty."""
        return self.base_offset + self._relative[-1] if self._relative else self.base_offset

    @property
    def last_position(self) -> int:
        return self._positions[-1] if self._positions else 0

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry at or below `offset`; (base, 0) if none."""
        i = bisect_right(self._relative, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._relative[i], self._positions[i]

    def entries(self) -> list[tuple[int, int]]:
        """All (absolute offset, position) entries, for tests and tools."""
        return [(self.base_offset + r, p) for r, p in zip(self._relative, self._positions)]

    # -- changes ---------------------------------------------------------------------
    def append(self, offset: int, position: int) -> None:
        """Add an entry; ValueError unless both offset and position exceed the last entry."""
        rel = offset - self.base_offset
        if not 0 <= rel <= 0x7FFFFFFF:
            raise ValueError(f"offset {offset} does not fit index {self.path} based at {self.base_offset}")
        if self._relative and (rel <= self._relative[-1] or position <= self._positions[-1]):
            raise ValueError(f"index entry ({offset}, {position}) is not above the last one in {self.path}")
        self._write_entry(len(self._relative), _OFFSET_ENTRY.pack(rel, position))
        self._relative.append(rel)
        self._positions.append(position)

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset is >= `offset` (recovery, follower truncation)."""
        keep = bisect_right(self._relative, offset - self.base_offset - 1)
        self._truncate_entries(keep)

    def reset(self) -> None:
        """Drop every entry and zero the file (before a rebuild); it stays preallocated."""
        self._truncate_entries(0)

    def _truncate_entries(self, keep: int) -> None:
        del self._relative[keep:]
        del self._positions[keep:]
        self._truncate_file(keep)


class TimeIndex(_IndexFile):
    """The `.timeindex` of one segment: timestamps strictly increase, offsets never decrease."""

    ENTRY_SIZE = 12

    def __init__(self, path: Path, base_offset: int, max_entries: int = DEFAULT_INDEX_BYTES // 12) -> None:
        super().__init__(path, base_offset, max_entries)
        self._timestamps = array("q")
        self._relative = array("q")

    def load(self) -> None:
        """Read the file (missing = empty); CorruptIndexError if its size or order is wrong."""
        self._timestamps, self._relative = array("q"), array("q")
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        if len(data) % self.ENTRY_SIZE:
            raise CorruptIndexError(f"time index file {self.path} has size {len(data)}, not a multiple of 12")
        last_ts, last_rel = -(1 << 63), -1
        for ts, rel in _TIME_ENTRY.iter_unpack(data):
            if ts == 0 and rel == 0 and (last_rel >= 0 or data[12:24] == _ZERO_TIME_ENTRY):
                # Zero tail of a preallocated time index. A first entry (0, 0) followed by
                # zeros is taken as an empty preallocated file (a real one is indistinguishable).
                break
            if ts <= last_ts or rel < last_rel or rel < 0:
                raise CorruptIndexError(
                    f"time index file {self.path} is not increasing at entry {len(self._timestamps)}")
            self._timestamps.append(ts)
            self._relative.append(rel)
            last_ts, last_rel = ts, rel

    def sanity_check(self, next_offset: int) -> None:
        """CorruptIndexError if the last entry names an offset the log does not hold."""
        if self._relative and self.base_offset + self._relative[-1] >= next_offset:
            raise CorruptIndexError(
                f"time index file {self.path} names offset {self.base_offset + self._relative[-1]} "
                f"at or beyond the segment's next offset {next_offset}")

    def __len__(self) -> int:
        return len(self._timestamps)

    @property
    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, or (-1, base offset) when empty (Kafka's)."""
        if not self._timestamps:
            return -1, self.base_offset
        return self._timestamps[-1], self.base_offset + self._relative[-1]

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry whose timestamp is below `timestamp`.

        Every record at or before that offset is older than `timestamp`, so a search for the
        first record at or after `timestamp` may start there. (-1, base offset) when none.
        """
        i = bisect_right(self._timestamps, timestamp - 1) - 1
        if i < 0:
            return -1, self.base_offset
        return self._timestamps[i], self.base_offset + self._relative[i]

    def entries(self) -> list[tuple[int, int]]:
        return [(t, self.base_offset + r) for t, r in zip(self._timestamps, self._relative)]

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Add (timestamp, offset) if `timestamp` exceeds the last entry's; True when added."""
        if self._timestamps and timestamp <= self._timestamps[-1]:
            return False
        rel = offset - self.base_offset
        if not 0 <= rel <= 0x7FFFFFFF:
            raise ValueError(f"offset {offset} does not fit time index {self.path} based at {self.base_offset}")
        if self._relative and rel < self._relative[-1]:
            raise ValueError(f"time index entry offset {offset} goes backwards in {self.path}")
        self._write_entry(len(self._timestamps), _TIME_ENTRY.pack(timestamp, rel))
        self._timestamps.append(timestamp)
        self._relative.append(rel)
        return True

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset is >= `offset`."""
        keep = bisect_right(self._relative, offset - self.base_offset - 1)
        del self._timestamps[keep:]
        del self._relative[keep:]
        self._truncate_file(keep)

    def reset(self) -> None:
        """Drop every entry and zero the file (before a rebuild); it stays preallocated."""
        del self._timestamps[:]
        del self._relative[:]
        self._truncate_file(0)
