"""`CleanerManager`: which compacted logs of a broker to clean next (pure; Kafka's LogCleanerManager).

Kafka 3.9's `grabFilthiestCompactedLog`, per cleaner thread: among the logs with
`cleanup.policy` containing `compact` that are neither being cleaned nor marked uncleanable
and are not empty, take those whose dirty ratio exceeds `min.cleanable.dirty.ratio` (strictly)
or that hold dirty bytes older than `max.compaction.lag.ms`, and clean the dirtiest one. With
`log.cleaner.threads` = n the broker cleans the n dirtiest such logs at once.

A cleaning that fails (an unexpected error, or a dedupe buffer too small for a segment) marks
its partition uncleanable, as Kafka's `markPartitionUncleanable`: it is skipped until the
partition leaves this broker (`forget`) or the broker restarts.

The cleaner checkpoints (first dirty offset per partition) are the caller's dict; this
class reads and updates it but does not persist it.
"""
from __future__ import annotations

from dataclasses import dataclass

from rafka.common.types import TopicPartition
from rafka.partition_worker.cleaner import CleanableInfo, CleanResult


@dataclass(frozen=True)
class LogToClean:
    """A candidate: its dirty range and ratio, and its topic's min.cleanable.dirty.ratio."""

    tp: TopicPartition
    info: CleanableInfo
    min_cleanable_ratio: float

    @property
    def cleanable(self) -> bool:
        return self.info.worth_cleaning(self.min_cleanable_ratio)


class CleanerManager:
    """Chooses logs to clean and keeps the uncleanable and in-progress sets. Not thread-safe."""

    def __init__(self) -> None:
        self.uncleanable: set[TopicPartition] = set()
        self.in_progress: set[TopicPartition] = set()

    def eligible(self, tp: TopicPartition) -> bool:
        """Whether to ask `tp` for its cleanable range at all."""
        return tp not in self.uncleanable and tp not in self.in_progress

    def choose(self, candidates: list[LogToClean], max_logs: int,
               checkpoints: dict[TopicPartition, int]) -> list[LogToClean]:
        """The up to `max_logs` dirtiest cleanable logs, dirtiest first; marks them in progress.

        A checkpoint that the log found out of range (and reset to its start) is updated in
        `checkpoints`, as Kafka rewrites it.
        """
        for c in candidates:
            if c.info.checkpoint_reset:
                checkpoints[c.tp] = c.info.first_dirty_offset
        ready = [c for c in candidates
                 if self.eligible(c.tp) and c.info.total_bytes > 0 and c.cleanable]
        ready.sort(key=lambda c: c.info.dirty_ratio, reverse=True)
        chosen = ready[:max(0, max_logs)]
        self.in_progress.update(c.tp for c in chosen)
        return chosen

    def done(self, tp: TopicPartition, result: CleanResult | None, checkpoints: dict[TopicPartition, int]) -> None:
        """Record the end of a cleaning: the new checkpoint, or (error / None = the call
        itself failed) mark `tp` uncleanable."""
        self.in_progress.discard(tp)
        if result is None or not result.ok:
            self.uncleanable.add(tp)
        else:
            checkpoints[tp] = result.first_dirty_offset

    def forget(self, tp: TopicPartition, checkpoints: dict[TopicPartition, int]) -> None:
        """The partition left this broker: drop everything known about it."""
        self.uncleanable.discard(tp)
        self.in_progress.discard(tp)
        checkpoints.pop(tp, None)


def cleaner_summary(thread_id: int, tp: TopicPartition, first_dirty_offset: int, result: CleanResult) -> str:
    """Kafka-like statistics of one cleaning, for the log (LogCleaner.recordStats)."""
    mb = 1024.0 * 1024.0
    secs = max(result.elapsed_ms, 1) / 1000
    read_mb, written_mb = result.bytes_read / mb, result.bytes_written / mb
    kept = result.records_read - result.records_removed
    size_reduction = 100.0 * (1 - result.bytes_written / result.bytes_read) if result.bytes_read else 0.0
    fewer = 100.0 * result.records_removed / result.records_read if result.records_read else 0.0
    return (f"\n\tLog cleaner thread {thread_id} cleaned log {tp} (dirty section = "
            f"[{first_dirty_offset}, {result.first_dirty_offset}])\n"
            f"\t{read_mb:,.1f} MB of log processed in {secs:,.1f} seconds ({read_mb / secs:,.1f} MB/sec).\n"
            f"\tIndexed {result.map_records_read:,d} records.\n"
            f"\tBuffer utilization: {100.0 * result.buffer_utilization:.1f}%\n"
            f"\tStart size: {read_mb:,.1f} MB ({result.records_read:,d} messages)\n"
            f"\tEnd size: {written_mb:,.1f} MB ({kept:,d} messages)\n"
            f"\t{size_reduction:.1f}% size reduction ({fewer:.1f}% fewer messages)\n")
