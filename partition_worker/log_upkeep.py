"""The chores of one served partition's log, as Kafka's LogManager schedules them for each log.

On timers: retention (`log.retention.check.interval.ms`), the flush scheduler
(`log.flush.scheduler.interval.ms`), producer-id expiry
(`producer.id.expiration.check.interval.ms`) and the removal of `.deleted` files
(`file.delete.delay.ms`); off the event loop: the fsync of rolled segments; and compaction
when the broker's cleaner asks for it. Every chore is bounded by the high watermark where it
deletes, and a failed write takes the log offline, as any other write of its dir.
"""
from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Callable

from rafka.common.config import LONG_MAX
from rafka.common.errors import KafkaStorageError
from rafka.partition_worker.cleaner import CleanableInfo, CleanResult
from rafka.partition_worker.storage_failure import describe_os_error

if TYPE_CHECKING:
    from rafka.partition_worker.served_partition import ServedPartition


class LogUpkeep:
    """The chores of one opening's log: timers started by `start`, cancelled by `stop`.
    Cleanings run one at a time (`cleaning` says one is under way: retention waits for it)."""

    def __init__(self, partition: ServedPartition) -> None:
        self._partition = partition
        self._clean_lock = asyncio.Lock()
        self._tasks: dict[str, asyncio.Task] = {}
        self._file_deletion_timer: asyncio.TimerHandle | None = None

    @property
    def cleaning(self) -> bool:
        return self._clean_lock.locked()

    def running(self) -> set[str]:
        """The names of the timed chores started: "retention", "producer expiry", "flush"."""
        return set(self._tasks)

    def start(self) -> None:
        """Start the timed chores not running yet. The flush scheduler runs only with an interval
        below Long.MAX (its default), so, as in Kafka, `flush.ms` alone flushes nothing."""
        config = self._partition.config
        self._start("producer expiry", self._expire_producers_periodically)
        if config.flush_scheduler_interval_ms < LONG_MAX:
            self._start("flush", self._flush_periodically)
        self._start("retention", self._apply_retention_periodically)

    def _start(self, name: str, chore: Callable) -> None:
        if name not in self._tasks:
            self._tasks[name] = asyncio.ensure_future(chore())

    def stop(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        self._tasks.clear()
        if self._file_deletion_timer is not None:
            self._file_deletion_timer.cancel()
            self._file_deletion_timer = None

    # -- retention ------------------------------------------------------------------------
    async def _apply_retention_periodically(self) -> None:
        """Every `log.retention.check.interval.ms`, delete old segments (as Kafka's log manager)."""
        partition = self._partition
        interval = partition.config.retention_check_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            if self.cleaning:
                continue  # a cleaning is reading old segments: delete them at the next check
            if partition.log.offline:
                continue
            try:
                self.apply_retention()
            except KafkaStorageError:
                partition.log_went_offline()
            except OSError:
                partition.logger.exception("retention failed; trying again in %.0f s", interval)

    def apply_retention(self, now_ms: int | None = None) -> int:
        """One retention pass over the log (bounded by the high watermark); returns the
        segments deleted. Their files are removed file.delete.delay.ms later."""
        partition = self._partition
        deleted = partition.log.delete_old_segments(partition.high_watermark(), now_ms)
        if deleted:
            partition.wrote()
            self.schedule_file_deletion()
        return deleted

    def schedule_file_deletion(self) -> None:
        """Arm one timer for the earliest `.deleted` files (later ones are due later still)."""
        due = self._partition.log.next_file_deletion_ms
        if self._file_deletion_timer is not None or due is None:
            return
        delay_s = max(0.0, due / 1000 - time.time())
        self._file_deletion_timer = asyncio.get_running_loop().call_later(delay_s, self._delete_due_files)

    def _delete_due_files(self) -> None:
        self._file_deletion_timer = None
        try:
            self._partition.log.delete_pending_files()
        except OSError:
            self._partition.logger.exception("could not remove deleted segment files")
        self.schedule_file_deletion()

    # -- flush and producer expiry -----------------------------------------------------------
    def flush_rolled_in_background(self, segments: tuple, done: Callable[[], None]) -> None:
        """fsync segments the log just rolled on a thread of the loop's executor, then move the
        recovery point (`done`) back on the loop: the append that rolled, and every request of
        the partition behind it, do not wait for the page cache's share of a 1 GiB segment
        (measured here: 300 MB written over 6 s took 0.58 s to fsync). A failed fsync takes the
        log offline, as a failed flush does on the loop. Without a running loop (a test driving
        the replica directly), at once."""
        partition = self._partition
        log = partition.log

        def flush_all() -> None:
            for segment in segments:
                segment.flush()

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            flush_all()
            done()
            return

        def finished(future: asyncio.Future) -> None:
            error = future.exception()
            if error is None:
                done()
            elif log.closed or isinstance(error, FileNotFoundError):   # closed, or deleted, meanwhile
                partition.logger.info("rolled segments %s not flushed in the background: %s", segments, error)
            else:   # (mark_offline logs it)
                reason = describe_os_error(error) if isinstance(error, OSError) else repr(error)
                log.mark_offline(f"flushing rolled segments failed: {reason}", error)
                partition.log_went_offline()

        loop.run_in_executor(None, flush_all).add_done_callback(finished)

    async def _expire_producers_periodically(self) -> None:
        """Every `producer.id.expiration.check.interval.ms`, forget idle producers (as Kafka)."""
        partition = self._partition
        interval = partition.config.producer_id_expiration_check_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            expired = partition.log.remove_expired_producers()
            if expired:
                partition.logger.info("expired %d producer ids: %s", len(expired), expired[:20])

    async def _flush_periodically(self) -> None:
        """Every `log.flush.scheduler.interval.ms`, flush if `flush.ms` has passed since the last
        flush (Kafka's LogManager.flushDirtyLogs)."""
        partition = self._partition
        interval = partition.config.flush_scheduler_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            if partition.log.offline:
                continue
            try:
                partition.log.maybe_flush(int(time.time() * 1000))
            except KafkaStorageError:
                partition.log_went_offline()

    # -- compaction ----------------------------------------------------------------------
    def cleanable(self, first_dirty_offset: int | None = None) -> CleanableInfo:
        """Dirty range and ratio for the cleaner checkpoint `first_dirty_offset`, below the high watermark."""
        partition = self._partition
        return partition.log.cleanable(_now_ms(), first_dirty_offset, max_offset=partition.high_watermark())

    async def clean(self, dedupe_buffer_bytes: int, first_dirty_offset: int | None = None) -> CleanResult:
        """Compact the log once (see partition_worker/cleaner.py); returns the new checkpoint.

        The rewrite runs on a worker thread (it reads only non-active segments and writes new
        `.cleaned` files), so appends and reads go on meanwhile; the swap of the segment tuple
        happens back on this event loop. Cleanings of this replica run one at a time. The
        replaced segments' files are deleted after file.delete.delay.ms.
        """
        partition = self._partition
        async with self._clean_lock:
            partition.wrote()
            log = partition.log
            cleaning = log.start_clean(dedupe_buffer_bytes, _now_ms(), first_dirty_offset,
                                       max_offset=partition.high_watermark())
            result = await asyncio.to_thread(cleaning.run)
            result = log.finish_clean(cleaning, result)
            if result.ok and result.segments_cleaned:
                # 0.1 s late so the wall clock has surely passed the due time; after close() this
                # finds nothing left to delete (close deleted them).
                asyncio.get_running_loop().call_later(partition.config.file_delete_delay_ms / 1000 + 0.1,
                                                      log.delete_swapped_out_segments)
            return result


def _now_ms() -> int:
    return int(time.time() * 1000)
