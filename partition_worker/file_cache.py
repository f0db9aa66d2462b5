"""A bounded cache of open `.log` files of non-active segments, one per process.

Kafka keeps every segment's files open (and memory-mapped), so a broker with many partitions
needs a very high open-file limit. Here only the active segment of each log keeps its files
open; an older segment's `.log` is opened when a read, scan or recovery needs it and stays in
this least-recently-used cache until evicted. Its indexes are in memory and need no file.

The capacity defaults to a quarter of the soft RLIMIT_NOFILE (between 16 and 1024), leaving
the rest to sockets, active segments and everything else the process opens; `configure()`
changes it. Entries are keyed by the segment object, not its path, so a segment deleted and
created again at the same base offset never gets the old file's descriptor.

Thread safety: every method takes a lock, and a descriptor handed out by `borrow()` is pinned
(never closed by eviction) until its block ends, so the number cannot be reused for another
file while a caller reads it. Pinned entries may push the cache briefly over its capacity.
"""
from __future__ import annotations

import logging
import os
import resource
import threading
from collections import OrderedDict
from typing import Hashable

log = logging.getLogger(__name__)

MIN_CAPACITY = 16
MAX_CAPACITY = 1024


def default_capacity() -> int:
    """A quarter of this process's soft open-file limit, kept within [16, 1024]."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CAPACITY
    return max(MIN_CAPACITY, min(MAX_CAPACITY, soft // 4))


class _Entry:
    __slots__ = ("fd", "pins")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pins = 0


class Borrowed:
    """`with cache.borrow(key, path) as fd:` the descriptor stays open until the block ends."""

    __slots__ = ("_cache", "_key", "_entry")

    def __init__(self, cache: "SegmentFileCache", key: Hashable, entry: _Entry) -> None:
        self._cache, self._key, self._entry = cache, key, entry

    def __enter__(self) -> int:
        return self._entry.fd

    def __exit__(self, *_exc: object) -> None:
        self._cache._unpin(self._key, self._entry)


class SegmentFileCache:
    """LRU of read-write descriptors of segment `.log` files; the oldest unpinned one closes first."""

    def __init__(self, capacity: int | None = None) -> None:
        self._capacity = default_capacity() if capacity is None else max(1, capacity)
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._lock = threading.Lock()
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

    def borrow(self, key: Hashable, path: str | os.PathLike) -> Borrowed:
        """The open file of `key` (opening `path` read-write if it is not cached), pinned.

        OSError (FileNotFoundError, EMFILE, ...) when the file cannot be opened.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = _Entry(os.open(path, os.O_RDWR))
                entry.pins = 1
                self.opens += 1
                self._entries[key] = entry
                self._evict()
            else:
                self._entries.move_to_end(key)
                entry.pins += 1
        return Borrowed(self, key, entry)

    def drop(self, key: Hashable) -> None:
        """Forget `key` and close its file (segment closed or deleted); a no-op if not cached.

        A pinned file closes when its last borrower is done.
        """
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is not None and entry.pins == 0:
                os.close(entry.fd)

    def close_all(self) -> None:
        """Close every unpinned file (tests, shutdown)."""
        with self._lock:
            for key in [k for k, e in self._entries.items() if e.pins == 0]:
                os.close(self._entries.pop(key).fd)

    def _unpin(self, key: Hashable, entry: _Entry) -> None:
        with self._lock:
            entry.pins -= 1
            if entry.pins:
                return
            if self._entries.get(key) is not entry:
                os.close(entry.fd)  # dropped while borrowed
            elif len(self._entries) > self._capacity:
                self._evict()

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
            os.close(self._entries.pop(key).fd)
        self.evictions += len(victims)


_shared = SegmentFileCache()


def shared_cache() -> SegmentFileCache:
    """The process-wide cache every `LogSegment` uses unless given another."""
    return _shared


def configure(capacity: int) -> None:
    """Set the process-wide cache's capacity (e.g. from a broker's open-file budget)."""
    _shared.configure(capacity)
    log.info("segment file cache capacity set to %d", _shared.capacity)


__all__ = ["Borrowed", "SegmentFileCache", "configure", "default_capacity", "shared_cache"]
