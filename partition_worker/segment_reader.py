"""The front end's only door to segment files: what `net/` may know of how a replica stores its log.

A replica answers a fetch with file regions (`messages.Region`: path, position, length,
inode) and the front end sends their bytes itself, with sendfile, or reads on from where an
answer ended. Everything it needs for that is here, so the file layout, the batch format and
the rules for finding a file after retention or compaction stay inside `partition_worker/`:

- `region_file_cache()`: the bounded cache of open files a front end sends regions from,
  keyed by `region_key(region)` and found by identity (`open_region_file`): pinned while a
  response is sent, swept of deleted segments every 30 s, and closed on a thread of their
  own (`file_reaper`: freeing a deleted segment's blocks would stall the event loop);
- `read_region`: one region's bytes, found by identity;
- `iter_headers`: the batch headers in a stretch of a segment file (no CRC check);
- `next_offset_after`: the offset after the last whole batch of some bytes;
- `transactional_producer`: the producer of a produce request's transactional batch.
"""
from __future__ import annotations

import time
from typing import BinaryIO, Callable

from rafka.partition_worker.file_cache import SegmentFileCache
from rafka.partition_worker.file_reaper import file_reaper
from rafka.partition_worker.messages import Region
from rafka.partition_worker.record_batch import (
    ATTRIBUTES_OFFSET, HEADER_STRUCT, TRANSACTIONAL_FLAG_MASK, BatchHeader, next_offset_after,
)
from rafka.partition_worker.segment import iter_headers
from rafka.partition_worker.segment_files import open_region_file, read_region

# The front end's open files for sendfile; its process also holds sockets and channels.
REGION_FILE_CACHE_CAPACITY = 256
# How often unlinked (deleted) segment files are closed, so they stop holding disk space.
REGION_FILES_SWEEP_INTERVAL_S = 30.0


def region_key(region: Region) -> tuple[str, int]:
    """The cache key of a region's file: its path and inode (0, or none: whatever the path names)."""
    return region.path, getattr(region, "inode", 0)


def transactional_producer(records: bytes | bytearray | memoryview) -> tuple[int, int] | None:
    """(producer id, producer epoch) of the first batch of a produce request's records when it
    is transactional (a v3+ produce carries exactly one); None when it is not, or too short to
    say (the replica refuses such records). Reads the header only: no CRC check."""
    if len(records) < HEADER_STRUCT.size or not records[ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_FLAG_MASK:
        return None
    fields = HEADER_STRUCT.unpack_from(records, 0)
    return fields[9], fields[10]


def _open_region(key: tuple[str, int]) -> BinaryIO | None:
    return open_region_file(*key)


def region_file_cache(capacity: int = REGION_FILE_CACHE_CAPACITY, *,
                      clock: Callable[[], float] = time.monotonic) -> SegmentFileCache[BinaryIO]:
    """A cache of the files regions name, opened read-only by identity (None: deleted for good),
    closed by the process's `file_reaper`."""
    return SegmentFileCache(capacity, opener=_open_region, sweep_interval_s=REGION_FILES_SWEEP_INTERVAL_S,
                            clock=clock, closer=file_reaper().close)


__all__ = [
    "BatchHeader", "REGION_FILE_CACHE_CAPACITY", "REGION_FILES_SWEEP_INTERVAL_S", "iter_headers",
    "next_offset_after", "open_region_file", "read_region", "region_file_cache", "region_key",
    "transactional_producer",
]
