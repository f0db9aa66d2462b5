"""Kafka's sparse segment indexes: `.index` (offset → file position) and `.timeindex`.

`.index`: 8-byte entries, relative offset (int32 BE, offset - segment base) then file
position (int32 BE). The log adds one every `index.interval.bytes` of appended batches,
keyed by the batch's *last* offset and the position where that batch starts (as Kafka's
LogSegment.append), so `lookup(t)` gives a position at or before the batch holding `t`.

`.timeindex`: 12-byte entries, timestamp (int64 BE) then relative offset (int32 BE), added
only when the segment's max timestamp so far grows: all records at or before that offset
have timestamps at most that value.

Entries live in memory (`array`) and are appended to the file as they are made. Unlike
Kafka the files are not preallocated nor memory-mapped (a later change); they always hold
exactly the entries, as Kafka leaves them after a clean shutdown.
"""
from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class CorruptIndexError(Exception):
    """An index file that fails its sanity check; the segment rebuilds it from the log.

    Internal to the storage engine: it never leaves `PartitionLog.open`.
    """


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class OffsetIndex:
    """The `.index` of one segment: relative offsets and positions both strictly increase."""

    ENTRY_SIZE = 8

    def __init__(self, path: Path, base_offset: int, max_entries: int = 1 << 30) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self.max_entries = max_entries
        self._relative = array("q")
        self._positions = array("q")
        self._fd: int | None = None

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
            if rel <= last_rel or pos <= last_pos or rel < 0 or pos < 0:
                if rel == 0 and pos == 0 and last_rel >= 0:
                    # Zero tail of a preallocated Kafka index: the entries end here.
                    break
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
    def is_full(self) -> bool:
        return len(self._relative) >= self.max_entries

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
        self._relative.append(rel)
        self._positions.append(position)
        _write_all(self._writer(), _OFFSET_ENTRY.pack(rel, position))

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset is >= `offset` (recovery, follower truncation)."""
        keep = bisect_right(self._relative, offset - self.base_offset - 1)
        self._truncate_entries(keep)

    def reset(self) -> None:
        """Drop every entry and empty the file (before a rebuild)."""
        self._truncate_entries(0)

    def _truncate_entries(self, keep: int) -> None:
        del self._relative[keep:]
        del self._positions[keep:]
        os.truncate(self._writer(), keep * self.ENTRY_SIZE)

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _writer(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd


class TimeIndex:
    """The `.timeindex` of one segment: timestamps strictly increase, offsets never decrease."""

    ENTRY_SIZE = 12

    def __init__(self, path: Path, base_offset: int, max_entries: int = 1 << 30) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self.max_entries = max_entries
        self._timestamps = array("q")
        self._relative = array("q")
        self._fd: int | None = None

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
            if ts <= last_ts or rel < last_rel or rel < 0:
                if ts == 0 and rel == 0 and last_rel >= 0:
                    break  # zero tail of a preallocated Kafka time index
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
    def is_full(self) -> bool:
        return len(self._timestamps) >= self.max_entries

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
        self._timestamps.append(timestamp)
        self._relative.append(rel)
        _write_all(self._writer(), _TIME_ENTRY.pack(timestamp, rel))
        return True

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset is >= `offset`."""
        keep = bisect_right(self._relative, offset - self.base_offset - 1)
        del self._timestamps[keep:]
        del self._relative[keep:]
        os.truncate(self._writer(), keep * self.ENTRY_SIZE)

    def reset(self) -> None:
        del self._timestamps[:]
        del self._relative[:]
        os.truncate(self._writer(), 0)

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _writer(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd
