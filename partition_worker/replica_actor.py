"""`PartitionReplica`: the Ray actor that owns one partition replica's log on one disk.

A thin shell around `PartitionLog` (storage) and `ReplicaState` (leadership, high
watermark): it serialises calls on its event loop, parks fetches until data arrives,
and translates results into the values of `messages.py`. Every public method returns
a value; an exception here means a bug or a broken disk.

Concurrency: this is an async actor; `append` and `read` do no await between looking at
the log and changing it, so they are atomic with respect to each other. The fetch wait
(`read` with `max_wait_ms`) yields, and it re-reads after waking. `clean` yields while a
worker thread rewrites non-active segments; the swap of the segment tuple happens back on
the event loop, so appends and reads see either the old or the new segments, never a mix.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from rafka.actors.ray_hooks.untraced import drop_tracing_wrappers
from rafka.common.collector import watch_long_collections
from rafka.common.config import LONG_MAX, LogConfig
from rafka.common.frames import FramedProtocol
from rafka.common.errors import ErrorCode, KafkaError, KafkaStorageError, OffsetOutOfRangeError
from rafka.common.events import first_of
from rafka.common.logging_util import Prefixed
from rafka.common.types import TopicPartition
from rafka.partition_worker.broker_checkpoints import PartitionCheckpoint
from rafka.partition_worker import data_channel as dc
from rafka.partition_worker.checkpoints import LeaderEpochCache, check_topic_id
from rafka.partition_worker.cleaner import CleanableInfo, CleanResult
from rafka.partition_worker.file_reaper import file_reaper
from rafka.partition_worker.held_writes import HeldWrites
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.parked_reads import Follow, ParkedReads
from rafka.partition_worker.storage_failure import describe_os_error
from rafka.partition_worker.messages import (
    EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, HIGH_WATERMARK_OFFSET, LATEST_TIMESTAMP, MAX_TIMESTAMP,
    AlterIsr, DeleteRecordsResult, FetchResult, FollowerAppendResult, OffsetLookup, ProduceResult, Region,
    ReplicaStatus,
)
from rafka.partition_worker.rest_horizon import RestReadiness
from rafka.partition_worker.replica_state import LeaderAndIsr, ReplicaState

state_change = logging.getLogger("rafka.state_change")
ALTER_ISR_TIMEOUT_S = 30.0
ALTER_ISR_RETRY_BACKOFF_MS = 1000   # a refused change (often: metadata not here yet) is proposed again after this
LOG_DIR_FAILURE_REPORT_TIMEOUT_S = 10.0   # one attempt to tell the broker this replica's log dir failed
LOG_DIR_FAILURE_REPORT_BACKOFF_S = 1.0


def partition_dir(log_dir: str, tp: TopicPartition) -> Path:
    return Path(log_dir) / str(tp)


class PartitionReplica:
    """One replica of one partition. Created by its broker's `BrokerCoordinator` only."""

    def __init__(self, broker_id: int, tp: TopicPartition | None = None, log_dir: str | None = None,
                 config: LogConfig | None = None, socket_path: str | None = None, *,
                 checkpoint: PartitionCheckpoint | None = None, topic_id: uuid.UUID | None = None,
                 coordinator: Any = None) -> None:
        """The replica of `tp`, its log opened; without `tp` a spare process that `open` gives a
        partition later (its broker keeps a few, so a dormant partition wakes without waiting
        for a process to start)."""
        drop_tracing_wrappers(self)   # its data socket's calls to its own methods, at every record
        self._broker_id = broker_id
        # Its broker's BrokerCoordinator (ISR changes go through it): a handle, or its (name, namespace),
        # looked up at the first ISR change; a handle unpickled here would import the coordinator's code.
        self._coordinator = coordinator
        self._tp: TopicPartition | None = None
        self._closed = asyncio.Event()
        # Reads by actor call (`read`) waiting on `_appended` now, across openings of the process
        # (one left from a closed opening only costs a spare Event until it sees `closed`).
        self._reads_by_call = 0
        if tp is not None:
            self._open(tp, log_dir, config, socket_path, checkpoint, topic_id)

    async def open(self, tp: TopicPartition, log_dir: str, config: LogConfig, socket_path: str | None,
                   checkpoint: PartitionCheckpoint | None = None, topic_id: uuid.UUID | None = None) -> dict:
        """A spare process (never opened, or closed and given back) takes the partition `tp`:
        its log opens, then it serves; answers as `ready` does."""
        if self._tp is not None and not self._closed.is_set():
            raise RuntimeError(f"this replica process still serves {self._tp}")
        self._open(tp, log_dir, config, socket_path, checkpoint, topic_id)
        return await self.ready()

    def _open(self, tp: TopicPartition, log_dir: str, config: LogConfig, socket_path: str | None,
              checkpoint: PartitionCheckpoint | None, topic_id: uuid.UUID | None) -> None:
        broker_id = self._broker_id
        self._tp = tp
        self._alter_isr_task: asyncio.Task | None = None
        self._isr_task: asyncio.Task | None = None
        self._closed = asyncio.Event()
        self._isr_retry_at_ms = 0   # after a refused or unanswered ISR change, wait before the next
        self._socket_path = socket_path
        self._data_server: asyncio.base_events.Server | None = None
        self._config = config
        self._log_dir = log_dir
        self._logger = Prefixed(logging.getLogger(__name__), f"[PartitionReplica {tp} broker={broker_id}]")
        watch_long_collections(self._logger)
        started = time.monotonic()
        directory = partition_dir(log_dir, tp)
        check_topic_id(directory, tp, topic_id)
        self._log = PartitionLog.open(directory, config,
                                      recovery_point=checkpoint.recovery_point if checkpoint else None,
                                      log_start_offset=checkpoint.log_start_offset if checkpoint else None,
                                      # (deleted segments' blocks are freed, rolled ones fsynced, off the loop)
                                      remove_file=file_reaper().remove,
                                      flush_rolled_later=self._flush_rolled_in_background)
        self._leader_epochs = LeaderEpochCache(directory)
        # The checkpointed high watermark (Kafka's replication-offset-checkpoint): a leader's
        # never goes back, so after a restart or a dormancy consumers see what they saw before.
        known_hw = checkpoint.high_watermark if checkpoint is not None and checkpoint.high_watermark else 0
        self._state = ReplicaState(broker_id=broker_id, high_watermark=min(known_hw, self._log.log_end_offset))
        # for dormancy (`replica.dormant.after.ms`, `replica.dormant.retry.horizon.ms`)
        self._readiness = RestReadiness(time.monotonic(), config.replica_dormant_retry_horizon_ms)
        self._awaiting_replication = 0        # acks=all appends not answered yet
        self._idle_task: asyncio.Task | None = None
        self._appended = asyncio.Event()   # for reads by actor call (`read`)
        self._parked = ParkedReads(self._answer_read)   # reads on the data socket waiting for data
        self._replicated = asyncio.Event()   # set (and replaced) whenever the high watermark moves
        self._expiry_task: asyncio.Task | None = None
        self._flush_task: asyncio.Task | None = None
        self._clean_lock = asyncio.Lock()
        self._retention_task: asyncio.Task | None = None
        self._file_deletion_timer: asyncio.TimerHandle | None = None
        self._dir_failure_task: asyncio.Task | None = None   # telling the broker the log dir failed
        self._logger.info("opened log in %.3f s: log start %d, log end %d",
                          time.monotonic() - started, self._log.log_start_offset, self._log.log_end_offset)

    # -- control plane -------------------------------------------------------------
    def pid(self) -> int:
        return os.getpid()

    async def ready(self) -> dict:
        """Answers once the log is open and the data socket listens: {"pid", "socket"}."""
        if self._socket_path and self._data_server is None:
            Path(self._socket_path).parent.mkdir(parents=True, exist_ok=True)
            try:
                os.unlink(self._socket_path)
            except FileNotFoundError:
                pass
            loop = asyncio.get_running_loop()
            self._data_server = await loop.create_unix_server(self._new_data_connection, path=self._socket_path)
        if self._expiry_task is None:
            self._expiry_task = asyncio.ensure_future(self._expire_producers_periodically())
        if self._flush_task is None and self._config.flush_scheduler_interval_ms < LONG_MAX:
            self._flush_task = asyncio.ensure_future(self._flush_periodically())
        if self._retention_task is None:
            self._retention_task = asyncio.ensure_future(self._apply_retention_periodically())
        if self._isr_task is None and self._coordinator is not None:
            self._isr_task = asyncio.ensure_future(self._check_isr_periodically())
        if self._idle_task is None and self._coordinator is not None and self._config.replica_dormant_after_ms >= 0:
            self._idle_task = asyncio.ensure_future(self._report_idleness())
        return {"pid": os.getpid(), "socket": self._socket_path}

    async def _apply_retention_periodically(self) -> None:
        """Every `log.retention.check.interval.ms`, delete old segments (as Kafka's log manager)."""
        interval = self._config.retention_check_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            if self._clean_lock.locked():
                continue  # a cleaning is reading old segments: delete them at the next check
            if self._log.offline:
                continue
            try:
                self.apply_retention()
            except KafkaStorageError:
                self._log_went_offline()
            except OSError:
                self._logger.exception("retention failed; trying again in %.0f s", interval)

    def apply_retention(self, now_ms: int | None = None) -> int:
        """One retention pass over the log (bounded by the high watermark); returns the
        segments deleted. Their files are removed file.delete.delay.ms later."""
        deleted = self._log.delete_old_segments(self._high_watermark(), now_ms)
        if deleted:
            self._wrote()
            self._schedule_file_deletion()
        return deleted

    def _flush_rolled_in_background(self, segments: tuple, done: Callable[[], None]) -> None:
        """fsync segments the log just rolled on a thread of the loop's executor, then move the
        recovery point (`done`) back on the loop: the append that rolled, and every request of
        the partition behind it, do not wait for the page cache's share of a 1 GiB segment
        (measured here: 300 MB written over 6 s took 0.58 s to fsync). A failed fsync takes the
        log offline, as a failed flush does on the loop. Without a running loop (a test driving
        the replica directly), at once."""
        log = self._log

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
                self._logger.info("rolled segments %s not flushed in the background: %s", segments, error)
            else:   # (mark_offline logs it)
                reason = describe_os_error(error) if isinstance(error, OSError) else repr(error)
                log.mark_offline(f"flushing rolled segments failed: {reason}", error)
                self._log_went_offline()

        loop.run_in_executor(None, flush_all).add_done_callback(finished)

    def _schedule_file_deletion(self) -> None:
        """Arm one timer for the earliest `.deleted` files (later ones are due later still)."""
        due = self._log.next_file_deletion_ms
        if self._file_deletion_timer is not None or due is None:
            return
        delay_s = max(0.0, due / 1000 - time.time())
        self._file_deletion_timer = asyncio.get_running_loop().call_later(delay_s, self._delete_due_files)

    def _delete_due_files(self) -> None:
        self._file_deletion_timer = None
        try:
            self._log.delete_pending_files()
        except OSError:
            self._logger.exception("could not remove deleted segment files")
        self._schedule_file_deletion()

    async def _expire_producers_periodically(self) -> None:
        """Every `producer.id.expiration.check.interval.ms`, forget idle producers (as Kafka)."""
        interval = self._config.producer_id_expiration_check_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            expired = self._log.remove_expired_producers()
            if expired:
                self._logger.info("expired %d producer ids: %s", len(expired), expired[:20])

    async def _flush_periodically(self) -> None:
        """Every `log.flush.scheduler.interval.ms`, flush if `flush.ms` has passed since the last
        flush (Kafka's LogManager.flushDirtyLogs). With the default interval (Long.MAX) this task
        is never started, so, as in Kafka, `flush.ms` alone flushes nothing."""
        interval = self._config.flush_scheduler_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            if self._log.offline:
                continue
            try:
                self._log.maybe_flush(int(time.time() * 1000))
            except KafkaStorageError:
                self._log_went_offline()

    def become(self, order: LeaderAndIsr) -> ErrorCode:
        """Take the role the controller decided (idempotent: a repeat changes nothing)."""
        before = (self._state.leader, self._state.leader_epoch)
        code = self._state.apply(order, self._log.log_end_offset, _now_ms())
        self._isr_retry_at_ms = 0
        self._wrote()
        if code is ErrorCode.NONE and order.leader == self._state.broker_id and not self._log.offline:
            # Kafka's makeLeader: the new epoch starts at the current log end.
            self._assign_leader_epoch(order.leader_epoch, self._log.log_end_offset)
        if code is ErrorCode.NONE and before != (order.leader, order.leader_epoch):
            state_change.info("[PartitionReplica %s broker=%d] leader=%d leader_epoch=%d isr=%s",
                              self._tp, self._state.broker_id, order.leader, order.leader_epoch, list(order.isr))
        elif code is not ErrorCode.NONE:
            self._logger.warning("refused LeaderAndIsr %s: %s", order, code.name)
        self._high_watermark_moved()
        return code

    def update_config(self, config: LogConfig) -> None:
        """The topic's config changed (AlterConfigs): later appends, rolls and retention use it."""
        self._config = config
        self._log.config = config
        self._logger.info("topic config updated")

    def status(self) -> ReplicaStatus:
        return ReplicaStatus(
            topic=self._tp.topic, partition=self._tp.partition, broker_id=self._state.broker_id,
            leader=self._state.leader, leader_epoch=self._state.leader_epoch,
            log_start_offset=self._log.log_start_offset, log_end_offset=self._log.log_end_offset,
            high_watermark=self._high_watermark(), pid=os.getpid(), recovery_point=self._log.recovery_point,
            log_offline=self._log.offline)

    def flush(self) -> int:
        """fsync the log; returns the log end offset that is now durable (KafkaStorageError
        when the log is offline)."""
        try:
            self._log.flush()
        finally:
            self._log_went_offline()
        return self._log.log_end_offset

    # -- a failed log dir (see storage_failure.py) ---------------------------------------
    def mark_log_dir_offline(self, reason: str) -> None:
        """The broker says this replica's log dir failed (under another log of that dir): take
        no more writes; reads of what is on disk go on. Idempotent."""
        self._log.mark_offline(reason)

    def _assign_leader_epoch(self, epoch: int, start_offset: int) -> None:
        """Note where a leader epoch starts; a failed write of `leader-epoch-checkpoint` takes
        the log offline like any other write of its dir."""
        try:
            self._leader_epochs.assign(epoch, start_offset)
        except OSError as e:
            self._log.mark_offline(f"writing leader-epoch-checkpoint failed: {describe_os_error(e)}", e)
            self._log_went_offline()

    def _log_went_offline(self) -> None:
        """If the log is offline now, tell the broker once (it takes the whole log dir offline
        and tells the controller); retried until the broker has heard it."""
        if self._log.offline and self._dir_failure_task is None and self._coordinator is not None:
            self._dir_failure_task = asyncio.ensure_future(self._report_log_dir_failure(self._log.offline_reason))

    async def _report_log_dir_failure(self, reason: str) -> None:
        while not self._closed.is_set():
            try:
                coordinator = await self._coordinator_handle()
                await asyncio.wait_for(coordinator.log_dir_failed.remote(self._log_dir, reason),
                                       LOG_DIR_FAILURE_REPORT_TIMEOUT_S)
                return
            except Exception as e:  # noqa: BLE001 - the coordinator is busy or restarting: tell it again
                self._logger.warning("could not tell the broker that log dir %s failed: %r", self._log_dir, e)
                await asyncio.sleep(LOG_DIR_FAILURE_REPORT_BACKOFF_S)

    # -- compaction ----------------------------------------------------------------------
    def cleanable(self, first_dirty_offset: int | None = None) -> CleanableInfo:
        """Dirty range and ratio for the cleaner checkpoint `first_dirty_offset`, below the high watermark."""
        return self._log.cleanable(_now_ms(), first_dirty_offset, max_offset=self._high_watermark())

    async def clean(self, dedupe_buffer_bytes: int, first_dirty_offset: int | None = None) -> CleanResult:
        """Compact the log once (see partition_worker/cleaner.py); returns the new checkpoint.

        The rewrite runs on a worker thread (it reads only non-active segments and writes new
        `.cleaned` files), so appends and reads go on meanwhile; the swap of the segment tuple
        happens back on this event loop. Cleanings of this replica run one at a time. The
        replaced segments' files are deleted after file.delete.delay.ms.
        """
        async with self._clean_lock:
            self._wrote()
            now = _now_ms()
            cleaning = self._log.start_clean(dedupe_buffer_bytes, now, first_dirty_offset,
                                             max_offset=self._high_watermark())
            result = await asyncio.to_thread(cleaning.run)
            result = self._log.finish_clean(cleaning, result)
            if result.ok and result.segments_cleaned:
                # 0.1 s late so the wall clock has surely passed the due time; after close() this
                # finds nothing left to delete (close deleted them).
                asyncio.get_running_loop().call_later(self._config.file_delete_delay_ms / 1000 + 0.1,
                                                      self._log.delete_swapped_out_segments)
            return result

    async def await_close(self) -> None:
        """Returns on a clean close. Its broker keeps this call outstanding: if it fails
        instead, the replica's process died (`ReplicaReconciler` then restarts it)."""
        await self._closed.wait()

    def close(self) -> ReplicaStatus:
        """Clean shutdown: flush, snapshot producer state and mark the log clean, so the next
        open skips recovery. Returns the final status (its recovery point is the log end)."""
        self._closed.set()
        self._parked.close()
        for task in (self._expiry_task, self._flush_task, self._retention_task, self._file_deletion_timer,
                     self._isr_task, self._alter_isr_task, self._dir_failure_task, self._idle_task):
            if task is not None:
                task.cancel()
        self._expiry_task = self._flush_task = self._retention_task = self._file_deletion_timer = None
        self._isr_task = self._alter_isr_task = self._dir_failure_task = self._idle_task = None
        if self._data_server is not None:
            self._data_server.close()
            self._data_server = None
            try:
                os.unlink(self._socket_path)
            except (FileNotFoundError, TypeError):
                pass
        self._log.close()
        return self.status()

    # -- the data socket (see data_channel.py) ----------------------------------------
    def _new_data_connection(self) -> FramedProtocol:
        """One front end's connection: appends apply in arrival order, reads may park."""
        # Appends finish before on_frame returns and reads decode at once: the buffer can be shared.
        # A read with data (most of them) is answered right here too: a task per read costs
        # about as much as the read itself.
        protocol = FramedProtocol(dc.FRAME_HEAD.size, dc.frame_body_length, lambda head, body: None,
                                  reuse_buffer=True)
        # The connection belongs to this opening of the process: once it closes (the partition
        # rested, its topic was deleted, the broker stops), it never reaches the partition the
        # process may open next as a spare.
        closed, parked = self._closed, self._parked
        connection = id(protocol)
        protocol.closed.add_done_callback(lambda _: parked.drop_connection(connection))

        out: HeldWrites | None = None   # this connection's writes (once connected)

        def on_frame(head: bytes, body: bytearray) -> None:
            nonlocal out
            if closed.is_set():   # the front end takes the closed connection as NOT_LEADER
                protocol.transport.close()
                return
            if out is None:
                out = HeldWrites(protocol.transport)
            _, request_id = dc.FRAME_HEAD.unpack(head)
            view = memoryview(body)
            out.hold()
            try:
                if view[0] == dc.OP_APPEND:
                    acks, timeout_ms, record_sets = dc.decode_append(view)
                    results = self.append(record_sets, acks)
                    required = self._log.log_end_offset
                    if acks == -1 and self._awaits_replication(results, required):
                        asyncio.ensure_future(self._answer_after_replication(
                            protocol, request_id, results, required, timeout_ms))
                    else:
                        out.write(dc.frame(request_id, dc.encode_produce_results(results)))
                elif view[0] in (dc.OP_READ, dc.OP_READ_LOG_END, dc.OP_REPLICA_READ):
                    follow = None
                    if view[0] != dc.OP_REPLICA_READ:
                        offset, max_bytes, max_wait_ms, to_log_end, follow_id = dc.decode_read(view)
                        result = self._read_now(offset, max_bytes, to_log_end)
                        if follow_id and max_wait_ms > 0 and not to_log_end:
                            follow = Follow(connection, follow_id, max_bytes, max_wait_ms)
                    else:
                        follower, epoch, offset, max_bytes, max_wait_ms = dc.decode_replica_read(view)
                        result = self.replica_read(follower, epoch, offset, max_bytes)
                    if _final(result, max_wait_ms):
                        self._answer_read(out, request_id, result, follow)
                    else:  # nothing to read yet: park until an append or the deadline
                        read_again = (lambda o=offset, m=max_bytes, e=to_log_end: self._read_now(o, m, e)) \
                            if view[0] != dc.OP_REPLICA_READ \
                            else (lambda f=follower, e=epoch, o=offset, m=max_bytes: self.replica_read(f, e, o, m))
                        parked.park(connection, out, request_id, read_again, result, max_wait_ms,
                                    follow)
                elif view[0] == dc.OP_RELEASE:
                    parked.release(connection, dc.decode_release(view))
                elif view[0] == dc.OP_LIST_OFFSET:
                    lookup = self.list_offset(dc.decode_list_offset(view))
                    out.write(dc.frame(request_id, dc.encode_offset_lookup(lookup)))
                elif view[0] == dc.OP_DELETE_RECORDS:
                    deleted = self.delete_records_now(dc.decode_delete_records(view))
                    out.write(dc.frame(request_id, dc.encode_deleted(deleted)))
                elif view[0] == dc.OP_FOLLOWER_APPEND:
                    hw, log_start, records = dc.decode_follower_append(view)
                    answer = dc.encode_follower_result(self.append_as_follower(records, hw, log_start))
                    out.write(dc.frame(request_id, answer))
                else:
                    raise ValueError(f"unknown data-plane op {view[0]}")
            except Exception:  # noqa: BLE001 - a bad frame closes this connection only
                self._logger.exception("closing a data connection after a malformed frame")
                out.close()
            finally:
                out.release()

        protocol.on_frame = on_frame
        if self._socket_path is not None:
            asyncio.get_running_loop().call_soon(self._widen, protocol)
        return protocol

    @staticmethod
    def _widen(protocol: FramedProtocol) -> None:
        if protocol.transport is not None:
            dc.widen_socket_buffers(protocol.transport.get_extra_info("socket"))

    # -- acks=all: the produce purgatory (Kafka's DelayedProduce) ------------------------
    def _awaits_replication(self, results: list[ProduceResult], required_offset: int) -> bool:
        """Whether an acks=all append must wait for followers before it is answered."""
        return (any(r.error is ErrorCode.NONE for r in results)
                and self._state.acks_all_outcome(required_offset, self._config.min_insync_replicas) is None)

    async def _answer_after_replication(self, protocol: FramedProtocol, request_id: int,
                                        results: list[ProduceResult], required_offset: int, timeout_ms: int) -> None:
        """Answer an acks=all append once the high watermark passes `required_offset`, with
        NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas meanwhile,
        or REQUEST_TIMED_OUT after `timeout_ms` (the records stay in the log, as in Kafka)."""
        outcome = await self._await_replication(required_offset, timeout_ms)
        answered = [replace(r, error=outcome) if r.error is ErrorCode.NONE and outcome is not ErrorCode.NONE else r
                    for r in results]
        if protocol.transport is not None and not protocol.transport.is_closing():
            protocol.transport.write(dc.frame(request_id, dc.encode_produce_results(answered)))

    async def _await_replication(self, required_offset: int, timeout_ms: int) -> ErrorCode:
        self._awaiting_replication += 1
        try:
            return await self._replication_outcome(required_offset, timeout_ms)
        finally:
            self._awaiting_replication -= 1

    async def _replication_outcome(self, required_offset: int, timeout_ms: int) -> ErrorCode:
        # Bound to this opening of the process: once its partition closes (it rested, its topic
        # was deleted), the process may open another one, whose state says nothing of this append.
        closed, state, min_insync = self._closed, self._state, self._config.min_insync_replicas
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            if closed.is_set():
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            outcome = state.acks_all_outcome(required_offset, min_insync)
            if outcome is not None:
                return outcome
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return ErrorCode.REQUEST_TIMED_OUT
            await first_of([self._replicated, closed], remaining)

    def _high_watermark_moved(self) -> None:
        """Wake acks=all appends waiting on the high watermark, and consumers' parked fetches."""
        self._replicated.set()
        self._replicated = asyncio.Event()
        self._wake_fetchers()

    # -- a follower's fetch (the leader's side) -------------------------------------------
    def replica_read(self, follower: int, leader_epoch: int, fetch_offset: int, max_bytes: int) -> FetchResult:
        """A follower's fetch at `fetch_offset`: it has everything before it (its log end).
        Answers whole batches up to the log end (not the high watermark) with the high
        watermark to take; refuses a follower of another leader epoch (FENCED_LEADER_EPOCH
        when it knows an older one, UNKNOWN_LEADER_EPOCH a newer one) or not assigned here."""
        state = self._state
        if not state.is_leader or follower not in state.followers:
            return FetchResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if leader_epoch >= 0 and leader_epoch != state.leader_epoch:
            return FetchResult(ErrorCode.FENCED_LEADER_EPOCH if leader_epoch < state.leader_epoch
                               else ErrorCode.UNKNOWN_LEADER_EPOCH)
        end = self._log.log_end_offset
        start = self._log.log_start_offset
        before = state.high_watermark
        hw = state.follower_fetched(follower, fetch_offset, end, _now_ms(), self._config.replica_lag_time_max_ms)
        if hw != before:
            self._high_watermark_moved()
        self._maybe_alter_isr()
        if fetch_offset > end or fetch_offset < start:
            return FetchResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, hw, start)
        if fetch_offset == end:
            return FetchResult(ErrorCode.NONE, hw, hw, start)
        try:
            result = self._log.read(fetch_offset, max_bytes, max_offset=end)
        except OffsetOutOfRangeError:
            return FetchResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, hw, start)
        except OSError:
            self._logger.exception("could not read offset %d for follower %d", fetch_offset, follower)
            return FetchResult(ErrorCode.KAFKA_STORAGE_ERROR, hw, hw, start)
        regions = tuple(Region(r.path, r.position, r.length, r.inode) for r in result.regions)
        return FetchResult(ErrorCode.NONE, hw, hw, start, regions, result.next_offset if regions else -1)

    # -- data plane ----------------------------------------------------------------
    def append(self, batches: list, acks: int) -> list[ProduceResult]:
        """Append each produce request's records (one entry per request, in arrival order).

        Called for each APPEND frame of the data socket, in arrival order. Each entry is
        answered on its own: one corrupt batch fails its request only.
        """
        if not self._state.is_leader:
            return [ProduceResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)] * len(batches)
        if acks == -1 and len(self._state.isr) < self._config.min_insync_replicas:
            return [ProduceResult(ErrorCode.NOT_ENOUGH_REPLICAS)] * len(batches)
        results = []
        for records in batches:
            try:
                info = self._log.append(records, leader_epoch=self._state.leader_epoch,
                                        max_batch_bytes=self._config.max_message_bytes)
            except KafkaStorageError as e:   # logged once, when the log went offline
                results.append(ProduceResult(e.code, error_message=str(e)))
                continue
            except KafkaError as e:
                self._logger.info("refused produce: %s", e)
                results.append(ProduceResult(e.code, error_message=str(e), record_errors=e.record_errors))
                continue
            results.append(ProduceResult(ErrorCode.NONE, base_offset=info.base_offset,
                                         log_append_time_ms=info.log_append_time_ms,
                                         log_start_offset=self._log.log_start_offset))
        self._state.advance_high_watermark(self._log.log_end_offset)
        self._readiness.appended(time.monotonic())   # (no rest inside the producers' retry horizon)
        self._wake_fetchers()
        self._log_went_offline()
        return results

    async def read(self, fetch_offset: int, max_bytes: int, max_wait_ms: int = 0) -> FetchResult:
        """Whole batches from `fetch_offset` up to the high watermark, as file regions.

        With `max_wait_ms`, an empty answer waits for an append (or the deadline) first.
        An offset between the high watermark and the log end gets an empty answer.
        """
        result = self._read_now(fetch_offset, max_bytes)
        if _final(result, max_wait_ms):
            return result
        return await self._wait_for_data(lambda: self._read_now(fetch_offset, max_bytes), max_wait_ms, result)

    async def _wait_for_data(self, read_again: Callable[[], FetchResult], max_wait_ms: int,
                             result: FetchResult) -> FetchResult:
        """After the empty `result`, read again at each append (or high watermark move) until
        data comes or `max_wait_ms` passes (reads by actor call; the data socket's park in
        `parked_reads.py`)."""
        # Bound to this opening of the process (as `_replication_outcome`): a read parked here must
        # never read the partition the process opens next.
        closed = self._closed
        deadline = time.monotonic() + max_wait_ms / 1000
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or closed.is_set():
                return result
            self._reads_by_call += 1
            try:
                await first_of([self._appended, closed], remaining)
            finally:
                self._reads_by_call -= 1
            if closed.is_set():
                return result
            result = read_again()
            if time.monotonic() >= deadline or result.regions or result.error is not ErrorCode.NONE:
                return result

    def list_offset(self, timestamp: int) -> OffsetLookup:
        """ListOffsets: latest, earliest, max timestamp, or first offset at/after a timestamp."""
        if not self._state.is_leader:
            return OffsetLookup(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        epoch = self._state.leader_epoch
        hw = self._high_watermark()
        if timestamp == LATEST_TIMESTAMP:
            return OffsetLookup(ErrorCode.NONE, -1, hw, epoch)
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return OffsetLookup(ErrorCode.NONE, -1, self._log.log_start_offset, epoch)
        if timestamp == MAX_TIMESTAMP:
            found = self._log.max_timestamp_offset() if hasattr(self._log, "max_timestamp_offset") else None
            if found is None:
                return OffsetLookup(ErrorCode.NONE, -1, -1, epoch)
            offset, ts = found
            return OffsetLookup(ErrorCode.NONE, ts, offset, epoch)
        if timestamp < 0:
            return OffsetLookup(ErrorCode.INVALID_REQUEST)
        found = self._log.offset_for_timestamp(timestamp)
        if found is None or found[0] >= hw:
            return OffsetLookup(ErrorCode.NONE, -1, -1, epoch)
        offset, ts = found
        return OffsetLookup(ErrorCode.NONE, ts, offset, epoch)

    async def delete_records(self, offset: int) -> DeleteRecordsResult:
        """`delete_records_now`, as an actor call."""
        return self.delete_records_now(offset)

    def delete_records_now(self, offset: int) -> DeleteRecordsResult:
        """DeleteRecords on the leader (Kafka's `Partition.deleteRecordsOnLeader`): move the log
        start offset up to `offset` (-1: the high watermark) and delete the segments wholly
        below it. The low watermark answered is the log start offset (the only replica's).

        Not the leader: NOT_LEADER_OR_FOLLOWER. cleanup.policy without `delete`:
        POLICY_VIOLATION. Negative, or above the high watermark: OFFSET_OUT_OF_RANGE. An offset
        at or below the current log start changes nothing and answers it.
        """
        if not self._state.is_leader:
            return DeleteRecordsResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if not self._config.delete:
            return DeleteRecordsResult(ErrorCode.POLICY_VIOLATION)
        hw = self._high_watermark()
        target = hw if offset == HIGH_WATERMARK_OFFSET else offset
        if target < 0 or target > hw:
            self._logger.info("refused DeleteRecords to offset %d: the high watermark is %d", offset, hw)
            return DeleteRecordsResult(ErrorCode.OFFSET_OUT_OF_RANGE)
        self._wrote()
        try:
            self._log.maybe_increment_log_start_offset(target, hw, "ClientRecordDeletion")
            if self._log.delete_segments_below_log_start(hw):
                self._schedule_file_deletion()
        except KafkaStorageError:
            self._log_went_offline()
            return DeleteRecordsResult(ErrorCode.KAFKA_STORAGE_ERROR)
        return DeleteRecordsResult(ErrorCode.NONE, self._log.log_start_offset)

    # -- ISR changes (Kafka's AlterPartition, through the broker's coordinator) ----------
    async def _check_isr_periodically(self) -> None:
        """Every replica.lag.time.max.ms / 2, drop followers that stopped catching up (Kafka's
        isr-expiration task); expansions are proposed as followers' fetches arrive."""
        interval = self._config.replica_lag_time_max_ms / 2000
        while True:
            await asyncio.sleep(interval)
            self._maybe_alter_isr()

    def _maybe_alter_isr(self) -> None:
        """Propose the ISR the followers' progress calls for, one proposal at a time."""
        now = _now_ms()
        if self._coordinator is None or self._alter_isr_task is not None or now < self._isr_retry_at_ms:
            return
        proposal = self._state.propose_isr(self._log.log_end_offset, now, self._config.replica_lag_time_max_ms)
        if proposal is not None:
            self._alter_isr_task = asyncio.ensure_future(self._alter_isr(proposal))

    async def _coordinator_handle(self) -> Any:
        if isinstance(self._coordinator, tuple):
            from rafka.actors.actor_lookup import find_actor  # only here: the unit tests run it without Ray
            name, namespace = self._coordinator
            handle = await asyncio.to_thread(find_actor, name, namespace)
            if handle is None:
                raise LookupError(f"{name} is not running")
            self._coordinator = handle
        return self._coordinator

    async def _alter_isr(self, isr: tuple[int, ...]) -> None:
        state = self._state
        request = AlterIsr(self._tp.topic, self._tp.partition, state.broker_id, state.leader_epoch, isr,
                           state.partition_epoch)
        try:
            coordinator = await self._coordinator_handle()
            error, confirmed, partition_epoch = await asyncio.wait_for(
                coordinator.alter_isr.remote(request), ALTER_ISR_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - the coordinator is gone or slow: propose again later
            error, confirmed, partition_epoch = ErrorCode.REQUEST_TIMED_OUT, None, -1
            self._logger.warning("ISR change to %s got no answer: %r", list(isr), e)
        self._alter_isr_task = None
        if state.leader_epoch != request.leader_epoch or not state.is_leader:
            return   # leadership moved on meanwhile: the new LeaderAndIsr already says the ISR
        if error is ErrorCode.NONE:
            state_change.info("[PartitionReplica %s broker=%d] ISR %s -> %s", self._tp, state.broker_id,
                              list(state.isr), list(confirmed))
            state.isr_confirmed(tuple(confirmed), self._log.log_end_offset, partition_epoch)
        else:
            self._logger.info("ISR change to %s refused: %s", list(isr), error.name)
            if error is ErrorCode.INELIGIBLE_REPLICA:
                state.refused_as_ineligible(isr)
            state.isr_confirmed(None, self._log.log_end_offset)
            self._isr_retry_at_ms = _now_ms() + ALTER_ISR_RETRY_BACKOFF_MS
        self._high_watermark_moved()

    # -- dormancy (replica.dormant.after.ms) ----------------------------------------------
    def _wrote(self) -> None:
        """Something changed the log or the role: the replica is busy, not idle."""
        self._readiness.wrote(time.monotonic())

    def quiet(self) -> bool:
        """Whether this replica could close now and lose nothing a reader of its files needs:
        no write under way, and every replica has everything (a leader's high watermark is its
        log end, which its in-sync followers have reached; a follower has what its leader told
        it is committed)."""
        state = self._state
        if self._log.offline or self._clean_lock.locked() or self._awaiting_replication:
            return False
        end = self._log.log_end_offset
        if state.is_leader:
            now, lag_ms = _now_ms(), self._config.replica_lag_time_max_ms
            catching_up = any(p.last_fetch_ms and now - p.last_fetch_ms <= lag_ms and p.log_end_offset < end
                              for p in state.followers.values())   # (one outside the ISR, say)
            return (state.pending_isr is None and self._alter_isr_task is None and not catching_up
                    and self._high_watermark() == end)
        return state.leader >= 0 and state.high_watermark == end

    def idle_for_ms(self) -> float:
        """Milliseconds since the last write, or 0 while the replica is not quiet or appended
        within replica.dormant.retry.horizon.ms (`rest_horizon.py`): neither the dormancy timer
        nor a round making room under replica.max.live.processes rests it then."""
        return self._readiness.idle_for_ms(time.monotonic(), self.quiet())

    async def _report_idleness(self) -> None:
        """Once quiet and without writes for `replica.dormant.after.ms`, tell the broker (which
        closes this replica and serves its partition from the files until a write comes);
        again after the same delay while it stays so (the broker may have been busy)."""
        after_ms = self._config.replica_dormant_after_ms
        check_s = min(max(after_ms / 4000, 0.05), 5.0)
        while True:
            await asyncio.sleep(check_s)
            idle_ms = self.idle_for_ms()
            if idle_ms < after_ms:
                continue
            try:
                coordinator = await self._coordinator_handle()
                await asyncio.wait_for(coordinator.replica_idle.remote(self._tp, os.getpid()), ALTER_ISR_TIMEOUT_S)
            except Exception as e:  # noqa: BLE001 - the broker is busy or gone: it hears again later
                self._logger.info("could not report idleness: %r", e)
            self._wrote()   # (not again before another full delay)

    # -- a follower -----------------------------------------------------------------
    def append_as_follower(self, records: memoryview | bytes, leader_high_watermark: int,
                           leader_log_start_offset: int) -> FollowerAppendResult:
        """Append batches fetched from the leader exactly as they are (offsets, epochs and
        timestamps the leader's), note where each leader epoch starts, take the leader's
        high watermark (bounded by this log's end) and log start offset. Refused on a leader,
        or when the batches do not continue this log (the fetcher truncates or restarts)."""
        if self._state.is_leader or self._state.leader < 0:
            return FollowerAppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        try:
            if len(records):
                self._readiness.appended(time.monotonic())
                info = self._log.append_as_follower(records)
                for entry in info.epoch_starts:
                    self._assign_leader_epoch(entry.epoch, entry.start_offset)
            end = self._log.log_end_offset
            hw = self._state.follower_high_watermark(leader_high_watermark, end)
            if leader_log_start_offset > self._log.log_start_offset:
                self._log.maybe_increment_log_start_offset(min(leader_log_start_offset, hw), hw,
                                                           "LeaderOffsetIncremented")
        except KafkaStorageError:   # logged once, when the log went offline
            self._log_went_offline()
            return FollowerAppendResult(ErrorCode.KAFKA_STORAGE_ERROR, self._log.log_end_offset,
                                        self._state.high_watermark)
        except KafkaError as e:
            self._logger.warning("refused batches from leader %d: %s", self._state.leader, e)
            return FollowerAppendResult(e.code, self._log.log_end_offset, self._state.high_watermark)
        return FollowerAppendResult(ErrorCode.NONE, end, hw)

    def truncate_to(self, offset: int) -> int:
        """Drop every batch at or after `offset` (a follower's divergent tail, found with
        OffsetForLeaderEpoch) and the leader epochs starting there; returns the log end. An
        offline log (its dir failed) changes nothing: its appends are refused anyway."""
        if self._log.offline:
            return self._log.log_end_offset
        self._wrote()
        if self._log.truncate_to(offset):
            self._logger.info("truncated the log to offset %d (log end now %d)", offset, self._log.log_end_offset)
        self._leader_epochs.truncate_from_end(self._log.log_end_offset)
        self._state.high_watermark = min(self._state.high_watermark, self._log.log_end_offset)
        return self._log.log_end_offset

    def truncate_fully_and_start_at(self, offset: int) -> int:
        """Start the log afresh at `offset` (the leader's log starts past this one's end);
        an offline log changes nothing."""
        if self._log.offline:
            return self._log.log_end_offset
        self._wrote()
        self._log.truncate_fully_and_start_at(offset)
        self._leader_epochs.truncate_from_end(0)
        self._state.high_watermark = min(self._state.high_watermark, offset)
        self._logger.info("started the log afresh at offset %d", offset)
        return self._log.log_end_offset

    def offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int) -> tuple[ErrorCode, int, int]:
        """OffsetForLeaderEpoch on the leader: (error, epoch, end offset) of the largest epoch
        at or below `leader_epoch`, where a follower's log stops agreeing with this one. A
        `current_leader_epoch` other than this leader's (-1: not checked) is fenced (KIP-320)."""
        if not self._state.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1
        if current_leader_epoch >= 0 and current_leader_epoch != self._state.leader_epoch:
            return (ErrorCode.FENCED_LEADER_EPOCH if current_leader_epoch < self._state.leader_epoch
                    else ErrorCode.UNKNOWN_LEADER_EPOCH), -1, -1
        epoch, end = self._leader_epochs.end_offset_for(leader_epoch, self._log.log_end_offset)
        return ErrorCode.NONE, epoch, end

    def latest_leader_epoch(self) -> int:
        """The epoch of this log's last batch's leader (-1: none), for OffsetForLeaderEpoch."""
        latest = self._leader_epochs.latest_epoch
        return -1 if latest is None else latest

    # -- internals -----------------------------------------------------------------
    def _high_watermark(self) -> int:
        if self._state.is_leader:
            return self._state.advance_high_watermark(self._log.log_end_offset)
        return min(self._state.high_watermark, self._log.log_end_offset)

    def _read_now(self, fetch_offset: int, max_bytes: int, up_to_log_end: bool = False) -> FetchResult:
        """Whole batches up to the high watermark, or with `up_to_log_end` up to the log end
        (the broker's own read: see `data_channel.encode_read`; no committed window then)."""
        if not self._state.is_leader:
            return FetchResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        hw = self._high_watermark()
        start = self._log.log_start_offset
        if fetch_offset > self._log.log_end_offset or fetch_offset < start:
            return FetchResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, hw, start)
        end = self._log.log_end_offset if up_to_log_end else hw
        if fetch_offset >= end:
            return FetchResult(ErrorCode.NONE, hw, hw, start)
        try:
            result = self._log.read(fetch_offset, max_bytes, max_offset=end)
        except OffsetOutOfRangeError:
            return FetchResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, hw, start)
        except OSError:  # the disk failed under the log: the client refreshes metadata and retries
            self._logger.exception("could not read offset %d", fetch_offset)
            return FetchResult(ErrorCode.KAFKA_STORAGE_ERROR, hw, hw, start)
        if not result.regions:
            return FetchResult(ErrorCode.NONE, hw, hw, start)
        regions = tuple(Region(r.path, r.position, r.length, r.inode) for r in result.regions)
        return FetchResult(ErrorCode.NONE, hw, hw, start, regions, result.next_offset,
                           -1 if up_to_log_end else self._log.committed_end(regions[-1].path, hw))

    def _answer_read(self, transport: asyncio.BaseTransport | None, request_id: int, result: FetchResult,
                     follow: Follow | None) -> None:
        """A read's answer on the connection it came from, while that is open; with `follow`,
        and data up to the high watermark, its follow read parks at once at the next offset
        (`data_channel`'s follow reads), and the answer says so."""
        if transport is None or transport.is_closing():
            return
        followed = follow is not None and dc.follows(result)
        transport.write(dc.frame(request_id, dc.encode_fetch_result(result, followed)))
        if followed:
            offset, max_bytes = result.next_offset, follow.max_bytes
            waiting = FetchResult(ErrorCode.NONE, result.high_watermark, result.last_stable_offset,
                                  result.log_start_offset)
            self._parked.park(follow.connection, transport, follow.follow_id,
                              lambda: self._read_now(offset, max_bytes), waiting, follow.max_wait_ms, follow)

    def _wake_fetchers(self) -> None:
        """Parked reads read again: those on the data socket here and now, those by actor call
        (`read`) once they run."""
        if self._reads_by_call:   # a new Event per append costs the data socket's reads for nothing
            self._appended.set()
            self._appended = asyncio.Event()
        self._parked.wake()




def _final(result: FetchResult, max_wait_ms: int) -> bool:
    """Whether a read's first result is its answer: data, an error, or no wait asked for."""
    return bool(result.regions) or result.error is not ErrorCode.NONE or max_wait_ms <= 0


def _now_ms() -> int:
    return int(time.time() * 1000)
