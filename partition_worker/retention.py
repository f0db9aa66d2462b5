"""Retention: which old segments Kafka 3.9's `UnifiedLog.deleteOldSegments` removes, and how.

Three rules, each a run of the oldest segments that stops at the first one it keeps:
- log start offset: a segment whose next segment starts at or below the log start offset
  holds nothing readable (applies whatever the cleanup.policy);
- retention.ms (cleanup.policy has `delete`, -1 = keep forever): a segment whose largest
  timestamp is more than retention.ms before now;
- retention.bytes (same policy, -1 = unlimited): while the log is larger than the limit by
  at least the oldest segment's size, that segment goes.
A segment is deletable only when all of it is below the high watermark (its next segment's
base offset, or the log end for the last one, is <= the high watermark), and an empty last
segment never is. `PartitionLog` rolls first when every segment would go, so the active
segment is never deleted.

Deleting is Kafka's two steps: the files are renamed to `<name>.deleted` at once (readers
that already hold a region find them there, see `segment_files.py`) and removed after
file.delete.delay.ms; leftovers of a stop in between are removed when the log is opened.
The planning functions are pure; the file functions touch only the named segment's files.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from rafka.partition_worker.file_reaper import remove_now
from rafka.partition_worker.segment import LogSegment
from rafka.partition_worker.segment_files import DELETED_SUFFIX
from rafka.partition_worker.txn_index import TXN_INDEX_SUFFIX

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeletionPlan:
    """The oldest segments one rule deletes and why (the reason goes into the log lines)."""

    segments: tuple[LogSegment, ...]
    reason: str


def largest_timestamp(segment: LogSegment) -> int:
    """Kafka's `LogSegment.largestTimestamp`: the largest record timestamp in the segment, or
    the `.log` file's modification time when no record has one."""
    if segment.max_timestamp >= 0:
        return segment.max_timestamp
    try:
        return int(os.stat(segment.log_path).st_mtime * 1000)
    except FileNotFoundError:
        return -1


def deletable_segments(segments: Sequence[LogSegment], should_delete: Callable[[LogSegment, LogSegment | None], bool],
                       high_watermark: int) -> tuple[LogSegment, ...]:
    """The oldest segments, in order, up to the first one that must stay (Kafka's
    `LocalLog.deletableSegments` with `UnifiedLog`'s high-watermark bound).

    `should_delete(segment, next_segment)` is asked only about segments wholly below the
    high watermark, oldest first, and not again after it says no (it may keep a tally).
    """
    out: list[LogSegment] = []
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        upper = following.base_offset if following is not None else segment.next_offset
        if high_watermark < upper or not should_delete(segment, following):
            break
        if following is None and segment.size == 0:
            break
        out.append(segment)
    return tuple(out)


def log_start_offset_breached(segments: Sequence[LogSegment], log_start_offset: int,
                              high_watermark: int) -> DeletionPlan:
    """Segments wholly below the log start offset (Kafka's `deleteLogStartOffsetBreachedSegments`)."""
    found = deletable_segments(
        segments, lambda _, following: following is not None and following.base_offset <= log_start_offset,
        high_watermark)
    return DeletionPlan(found, f"log start offset {log_start_offset} breach")


def retention_ms_breached(segments: Sequence[LogSegment], retention_ms: int, now_ms: int,
                          high_watermark: int) -> DeletionPlan:
    """Segments whose largest timestamp is more than `retention_ms` old; none for -1."""
    reason = f"log retention time {retention_ms}ms breach based on the largest record timestamp in the segment"
    if retention_ms < 0:
        return DeletionPlan((), reason)
    found = deletable_segments(
        segments, lambda segment, _: now_ms - largest_timestamp(segment) > retention_ms, high_watermark)
    return DeletionPlan(found, reason)


def retention_size_breached(segments: Sequence[LogSegment], retention_bytes: int,
                            high_watermark: int) -> DeletionPlan:
    """The oldest segments whose removal keeps the log at or above `retention_bytes`; none for -1."""
    reason = f"log retention size {retention_bytes} breach"
    size = sum(s.size for s in segments)
    if retention_bytes < 0 or size < retention_bytes:
        return DeletionPlan((), reason)
    excess = size - retention_bytes

    def over_by_whole_segment(segment: LogSegment, _: LogSegment | None) -> bool:
        nonlocal excess
        if excess - segment.size < 0:
            return False
        excess -= segment.size
        return True

    return DeletionPlan(deletable_segments(segments, over_by_whole_segment, high_watermark), reason)


# -- files -------------------------------------------------------------------------------
def segment_paths(segment: LogSegment) -> tuple[Path, ...]:
    """The files of a segment under their live names: .log, .index, .timeindex, .txnindex
    (the last exists only for a segment that holds an abort marker)."""
    return (segment.log_path, segment.index.path, segment.time_index.path,
            segment.log_path.with_suffix(TXN_INDEX_SUFFIX))


def mark_deleted(segment: LogSegment) -> None:
    """Rename the segment's files to `<name>.deleted` (Kafka's `changeFileSuffixes`). Its open
    file descriptors stay valid, so a reader holding them is unaffected."""
    for path in segment_paths(segment):
        try:
            os.replace(path, str(path) + DELETED_SUFFIX)
        except FileNotFoundError:
            pass  # an index that was never written


def delete_marked_files(segment: LogSegment, remove: Callable[[str], None] = remove_now) -> None:
    """Close the segment and `remove` its `.deleted` files (after file.delete.delay.ms)."""
    segment.close()
    for path in segment_paths(segment):
        remove(str(path) + DELETED_SUFFIX)


def remove_leftover_deleted_files(directory: Path) -> list[str]:
    """Remove every `*.deleted` file in a partition directory (left by a stop before the
    delayed delete ran, as Kafka's LogLoader does on load); returns their names."""
    removed = []
    for path in directory.iterdir():
        if path.name.endswith(DELETED_SUFFIX) and path.is_file():
            remove_now(path)
            removed.append(path.name)
    return sorted(removed)
