"""The one bounded cache of open segment files, with pinning: the storage engine's and the front end's.

Kafka keeps every segment's files open (and memory-mapped), so a broker with many partitions
needs a very high open-file limit. Here only the active segment of each log keeps its files
open; an older segment's `.log` is opened when a read, scan or recovery needs it and stays in
a least-recently-used cache until evicted. Its indexes are in memory and need no file.

Two kinds of process use it:
- a replica (`shared_cache()`): read-write descriptors keyed by the segment object, not its
  path, so a segment deleted and created again at the same base offset never gets the old
  file's descriptor. The capacity defaults to a quarter of the soft RLIMIT_NOFILE (between 16
  and 1024), leaving the rest to sockets, active segments and everything else the process
  opens; `configure()` changes it.
- the front end (`segment_reader.region_file_cache()`): file objects for sendfile keyed by
  (path, inode), found by identity after a rename or swap, swept of deleted files, and
  closed on a thread of their own (`file_reaper`), off the event loop.

Pinning: a file handed out by `borrow()` or `acquire()` is never closed by eviction until its
block ends or `release()`, so its number cannot be reused for another file while a caller
reads or sends from it. Pinned entries may push the cache briefly over its capacity; the
least recently used unpinned ones go first. Thread safety: every method takes a lock.
"""
from __future__ import annotations

import logging
import os
import resource
import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Generic, Hashable, Iterable, TypeVar

from rafka.partition_worker.file_reaper import close_now

log = logging.getLogger(__name__)

MIN_CAPACITY = 16
MAX_CAPACITY = 1024

F = TypeVar("F")  # what the cache holds: a descriptor (int) or a file object


def default_capacity() -> int:
    """A quarter of this process's soft open-file limit, kept within [16, 1024]."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CAPACITY
    return max(MIN_CAPACITY, min(MAX_CAPACITY, soft // 4))


def open_read_write(_key: Hashable, path: str | os.PathLike) -> int:
    """The default opener: `path` as a read-write descriptor (OSError when it cannot be)."""
    return os.open(path, os.O_RDWR)


def _fileno(f: Any) -> int:
    return f if isinstance(f, int) else f.fileno()


def _unlinked(f: Any) -> bool:
    try:
        return os.fstat(_fileno(f)).st_nlink == 0
    except (OSError, ValueError):
        return True


class _Entry:
    __slots__ = ("file", "pins")

    def __init__(self, file: Any) -> None:
        self.file = file
        self.pins = 0


class Borrowed(Generic[F]):
    """`with cache.borrow(key, path) as f:` the file stays open until the block ends."""

    __slots__ = ("_cache", "_key", "_entry")

    def __init__(self, cache: "SegmentFileCache[F]", key: Hashable, entry: _Entry) -> None:
        self._cache, self._key, self._entry = cache, key, entry

    def __enter__(self) -> F:
        return self._entry.file

    def __exit__(self, *_exc: object) -> None:
        self._cache._unpin(self._key, self._entry)


class SegmentFileCache(Generic[F]):
    """LRU of open segment files; the oldest unpinned one closes first.

    `opener(key, *open_args)` opens the file of a key on a miss (returning None when there is
    no such file any more, or raising OSError); by default `path` read-write. Every
    `sweep_interval_s` of `clock` (None: never by itself) `acquire` and `borrow` first close
    the cached files that were unlinked, so deleted segments do not hold disk space for long.
    Every file the cache lets go is closed by `closer` (by default at once; an event loop's
    cache hands them to a `FileReaper`, as the last close of a deleted file is slow).
    """

    def __init__(self, capacity: int | None = None, *,
                 opener: Callable[..., F | None] = open_read_write,
                 sweep_interval_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 closer: Callable[[F], None] = close_now) -> None:
        self._capacity = default_capacity() if capacity is None else max(1, capacity)
        self._open = opener
        self._close = closer
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._pinned: dict[Any, tuple[Hashable, _Entry]] = {}  # file -> its entry, while pinned
        self._lock = threading.Lock()
        self._sweep_interval_s = sweep_interval_s
        self._clock = clock
        self._next_sweep = clock() + (sweep_interval_s or 0.0)
        self.opens = 0      # files opened, for tests and benches
        self.evictions = 0  # files closed to stay within the capacity

    @property
    def capacity(self) -> int:
        return self._capacity

    def configure(self, capacity: int) -> None:
        """Change the capacity (at least 1), closing the least recently used files above it."""
        with self._lock:
            self._capacity = max(1, capacity)
            self._evict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def borrow(self, key: Hashable, *open_args: Any) -> Borrowed[F]:
        """The open file of `key` (opened by `opener(key, *open_args)` if not cached), pinned
        until the `with` block ends. OSError (FileNotFoundError, EMFILE, ...) when the file
        cannot be opened."""
        self._sweep_if_due()
        with self._lock:
            entry = self._pin(key, open_args)
        if entry is None:
            raise FileNotFoundError(f"no file for {key!r}")
        return Borrowed(self, key, entry)

    def acquire(self, keys: Iterable[Hashable]) -> list[F] | None:
        """The file of each key (opened by `opener(key)` if not cached), pinned until
        `release`; None, with nothing pinned, when any of them no longer exists."""
        self._sweep_if_due()
        pinned: list[tuple[Hashable, _Entry]] = []
        with self._lock:
            try:
                for key in keys:
                    entry = self._pin(key, ())
                    if entry is None:
                        break
                    pinned.append((key, entry))
                else:
                    for key, entry in pinned:
                        self._pinned[entry.file] = (key, entry)
                    return [entry.file for _, entry in pinned]
            except BaseException:
                for key, entry in pinned:
                    self._unpin_locked(key, entry)
                raise
            for key, entry in pinned:
                self._unpin_locked(key, entry)
        return None

    def release(self, files: Iterable[F]) -> None:
        """Unpin files from `acquire`; one evicted or dropped meanwhile closes with its last pin."""
        with self._lock:
            for f in files:
                key, entry = self._pinned[f]
                self._unpin_locked(key, entry)

    def drop(self, key: Hashable) -> None:
        """Forget `key` and close its file (segment closed or deleted); a no-op if not cached.

        A pinned file closes when its last borrower is done.
        """
        with self._lock:
            self._drop(key)

    def sweep(self) -> int:
        """Drop cached files that were unlinked (their segment was deleted); returns how many."""
        with self._lock:
            if self._sweep_interval_s is not None:
                self._next_sweep = self._clock() + self._sweep_interval_s
            gone = [key for key, entry in self._entries.items() if _unlinked(entry.file)]
            for key in gone:
                self._drop(key)
        return len(gone)

    def close_all(self) -> None:
        """Close every unpinned file (tests, shutdown); pinned ones close with their last pin."""
        with self._lock:
            for key in list(self._entries):
                self._drop(key)

    def _sweep_if_due(self) -> None:
        if self._sweep_interval_s is not None and self._clock() >= self._next_sweep:
            self.sweep()

    def _pin(self, key: Hashable, open_args: tuple) -> _Entry | None:
        """The entry of `key`, opened if needed, with one more pin; None when it cannot be found (lock held)."""
        entry = self._entries.get(key)
        if entry is None:
            f = self._open(key, *open_args)
            if f is None:
                return None
            entry = _Entry(f)
            entry.pins = 1
            self.opens += 1
            self._entries[key] = entry
            self._evict()
        else:
            self._entries.move_to_end(key)
            entry.pins += 1
        return entry

    def _unpin(self, key: Hashable, entry: _Entry) -> None:
        with self._lock:
            self._unpin_locked(key, entry)

    def _unpin_locked(self, key: Hashable, entry: _Entry) -> None:
        entry.pins -= 1
        if entry.pins:
            return
        self._pinned.pop(entry.file, None)
        if self._entries.get(key) is not entry:
            self._close(entry.file)  # dropped while borrowed
        elif len(self._entries) > self._capacity:
            self._evict()

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None and entry.pins == 0:
            self._close(entry.file)

    def _evict(self) -> None:
        """Close least recently used unpinned files until within capacity (lock held)."""
        excess = len(self._entries) - self._capacity
        if excess <= 0:
            return
        victims = []
        for key, entry in self._entries.items():  # oldest first
            if entry.pins == 0:
                victims.append(key)
                if len(victims) == excess:
                    break
        for key in victims:
            self._close(self._entries.pop(key).file)
        self.evictions += len(victims)


_shared = SegmentFileCache()


def shared_cache() -> SegmentFileCache:
    """The process-wide cache every `LogSegment` uses unless given another."""
    return _shared


def configure(capacity: int) -> None:
    """Set the process-wide cache's capacity (e.g. from a broker's open-file budget)."""
    _shared.configure(capacity)
    log.info("segment file cache capacity set to %d", _shared.capacity)


__all__ = ["Borrowed", "SegmentFileCache", "configure", "default_capacity", "open_read_write", "shared_cache"]
