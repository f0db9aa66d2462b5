"""One opening of a partition by a replica process: its log, its role, and what it serves.

A `PartitionReplica` process may wait as a spare, serve one partition, close it and serve
another; everything that belongs to one partition lives here, made fresh at each open, so
nothing of one partition can reach the next. This is Kafka's `Partition` for one replica: the
leader's appends, reads, ListOffsets and DeleteRecords; a follower's appends and truncation;
the role, ISR and high watermark (`ReplicaState`); and whether it could rest (dormancy). Its
collaborators: `DataServer` (the data socket), `Purgatory` (requests that wait), `LogUpkeep`
(retention, flush, compaction) and `BrokerLink` (what it tells its broker).

Concurrency: one event loop; `append` and the reads do no await between looking at the log and
changing it, so they are atomic with respect to each other. Waits (acks=all, a read's
`max_wait_ms`) yield and look again when woken. `clean` yields while a worker thread rewrites
non-active segments; the swap of the segment tuple happens back on the loop, so appends and
reads see either the old or the new segments, never a mix. Every public method returns a
value; an exception here means a bug or a broken disk.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from pathlib import Path

from rafka.common.collector import watch_long_collections
from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode, KafkaError, KafkaStorageError
from rafka.common.logging_util import Prefixed
from rafka.common.types import TopicPartition
from rafka.partition_worker.broker_checkpoints import PartitionCheckpoint
from rafka.partition_worker.broker_link import BrokerLink, Coordinator
from rafka.partition_worker.checkpoints import LeaderEpochCache, check_topic_id
from rafka.partition_worker.control_records import ControlRecordType, EndTransactionMarker
from rafka.partition_worker.data_server import DataServer
from rafka.partition_worker.file_reaper import file_reaper
from rafka.partition_worker.leader_reads import lookup_offset, read_batches
from rafka.partition_worker.log import PartitionLog
from rafka.partition_worker.log_upkeep import LogUpkeep
from rafka.partition_worker.messages import (
    HIGH_WATERMARK_OFFSET, DeleteRecordsResult, FetchIsolation, FetchResult, FollowerAppendResult, OffsetLookup,
    ProduceResult, ReplicaStatus,
)
from rafka.partition_worker.purgatory import Purgatory, is_final
from rafka.partition_worker.replica_state import LeaderAndIsr, ReplicaState
from rafka.partition_worker.rest_horizon import RestReadiness
from rafka.partition_worker.storage_failure import describe_os_error

state_change = logging.getLogger("rafka.state_change")


def partition_dir(log_dir: str, tp: TopicPartition) -> Path:
    return Path(log_dir) / str(tp)


class ServedPartition:
    """The replica of `tp` on broker `broker_id`, its log open in `log_dir`, until `close`."""

    def __init__(self, broker_id: int, tp: TopicPartition, log_dir: str, config: LogConfig,
                 socket_path: str | None, checkpoint: PartitionCheckpoint | None = None,
                 topic_id: uuid.UUID | None = None, coordinator: Coordinator | None = None) -> None:
        """Open the log (from the broker's checkpoint of it, if any); serving starts at `start`."""
        self.tp = tp
        self.config = config
        self.log_dir = log_dir
        self.closed = asyncio.Event()
        self.logger = Prefixed(logging.getLogger(__name__), f"[PartitionReplica {tp} broker={broker_id}]")
        watch_long_collections(self.logger)
        started = time.monotonic()
        directory = partition_dir(log_dir, tp)
        check_topic_id(directory, tp, topic_id)
        self.upkeep = LogUpkeep(self)
        self.log = PartitionLog.open(directory, config,
                                     recovery_point=checkpoint.recovery_point if checkpoint else None,
                                     log_start_offset=checkpoint.log_start_offset if checkpoint else None,
                                     # (deleted segments' blocks are freed, rolled ones fsynced, off the loop)
                                     remove_file=file_reaper().remove,
                                     flush_rolled_later=self.upkeep.flush_rolled_in_background)
        self._leader_epochs = LeaderEpochCache(directory)
        # The checkpointed high watermark (Kafka's replication-offset-checkpoint): a leader's
        # never goes back, so after a restart or a dormancy consumers see what they saw before.
        known_hw = checkpoint.high_watermark if checkpoint is not None and checkpoint.high_watermark else 0
        self.state = ReplicaState(broker_id=broker_id, high_watermark=min(known_hw, self.log.log_end_offset))
        # for dormancy (`replica.dormant.after.ms`, `replica.dormant.retry.horizon.ms`)
        self._readiness = RestReadiness(time.monotonic(), config.replica_dormant_retry_horizon_ms,
                                        held_from_open=True)
        self.data_server = DataServer(self, socket_path)
        self.purgatory = Purgatory(self.closed, self.data_server.parked)
        self.broker = BrokerLink(self, coordinator)
        self.logger.info("opened log in %.3f s: log start %d, log end %d",
                         time.monotonic() - started, self.log.log_start_offset, self.log.log_end_offset)

    async def start(self) -> None:
        """Listen on the data socket and start the timed chores (idempotent)."""
        await self.data_server.listen()
        self.upkeep.start()
        self.broker.start()

    def close(self) -> ReplicaStatus:
        """Clean shutdown: flush, snapshot producer state and mark the log clean, so the next
        open skips recovery. Waiting requests end, parked reads' connections close. Returns the
        final status (its recovery point is the log end)."""
        self.closed.set()
        self.upkeep.stop()
        self.broker.stop()
        self.data_server.close()
        self.log.close()
        return self.status()

    # -- the role -------------------------------------------------------------------
    def become(self, order: LeaderAndIsr) -> ErrorCode:
        """Take the role the controller decided (idempotent: a repeat changes nothing)."""
        state, log = self.state, self.log
        before = (state.leader, state.leader_epoch)
        code = state.apply(order, log.log_end_offset, _now_ms())
        self.broker.role_changed()
        self.wrote()
        if code is ErrorCode.NONE and order.leader == state.broker_id and not log.offline:
            # Kafka's makeLeader: the new epoch starts at the current log end.
            self._assign_leader_epoch(order.leader_epoch, log.log_end_offset)
        if code is ErrorCode.NONE and before != (order.leader, order.leader_epoch):
            state_change.info("[PartitionReplica %s broker=%d] leader=%d leader_epoch=%d isr=%s",
                              self.tp, state.broker_id, order.leader, order.leader_epoch, list(order.isr))
        elif code is not ErrorCode.NONE:
            self.logger.warning("refused LeaderAndIsr %s: %s", order, code.name)
        self.high_watermark_moved()
        return code

    def update_config(self, config: LogConfig) -> None:
        """The topic's config changed (AlterConfigs): later appends, rolls and retention use it."""
        self.config = config
        self.log.config = config
        self.logger.info("topic config updated")

    def status(self) -> ReplicaStatus:
        state, log = self.state, self.log
        return ReplicaStatus(
            topic=self.tp.topic, partition=self.tp.partition, broker_id=state.broker_id,
            leader=state.leader, leader_epoch=state.leader_epoch,
            log_start_offset=log.log_start_offset, log_end_offset=log.log_end_offset,
            high_watermark=self.high_watermark(), pid=os.getpid(), recovery_point=log.recovery_point,
            log_offline=log.offline)

    def flush(self) -> int:
        """fsync the log; returns the log end offset that is now durable (KafkaStorageError
        when the log is offline)."""
        try:
            self.log.flush()
        finally:
            self.log_went_offline()
        return self.log.log_end_offset

    def mark_log_dir_offline(self, reason: str) -> None:
        """The broker says this replica's log dir failed (under another log of that dir): take
        no more writes; reads of what is on disk go on. Idempotent."""
        self.log.mark_offline(reason)

    def log_went_offline(self) -> None:
        """If the log is offline now, tell the broker (once)."""
        self.broker.log_went_offline()

    def _assign_leader_epoch(self, epoch: int, start_offset: int) -> None:
        """Note where a leader epoch starts; a failed write of `leader-epoch-checkpoint` takes
        the log offline like any other write of its dir."""
        try:
            self._leader_epochs.assign(epoch, start_offset)
        except OSError as e:
            self.log.mark_offline(f"writing leader-epoch-checkpoint failed: {describe_os_error(e)}", e)
            self.log_went_offline()

    def high_watermark(self) -> int:
        if self.state.is_leader:
            return self.state.advance_high_watermark(self.log.log_end_offset)
        return min(self.state.high_watermark, self.log.log_end_offset)

    def high_watermark_moved(self) -> None:
        """Wake acks=all appends waiting on the high watermark, and consumers' parked fetches."""
        self.purgatory.high_watermark_moved()

    # -- the leader: appends (acks=all waits in the purgatory) -------------------------------
    def append(self, batches: list, acks: int) -> list[ProduceResult]:
        """Append each produce request's records (one entry per request, in arrival order).
        Each entry is answered on its own: one corrupt batch fails its request only."""
        state, log, config = self.state, self.log, self.config
        if not state.is_leader:
            return [ProduceResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)] * len(batches)
        if acks == -1 and len(state.isr) < config.min_insync_replicas:
            return [ProduceResult(ErrorCode.NOT_ENOUGH_REPLICAS)] * len(batches)
        results = []
        for records in batches:
            try:
                info = log.append(records, leader_epoch=state.leader_epoch, max_batch_bytes=config.max_message_bytes)
            except KafkaStorageError as e:   # logged once, when the log went offline
                results.append(ProduceResult(e.code, error_message=str(e)))
                continue
            except KafkaError as e:
                self.logger.info("refused produce: %s", e)
                results.append(ProduceResult(e.code, error_message=str(e), record_errors=e.record_errors))
                continue
            results.append(ProduceResult(ErrorCode.NONE, base_offset=info.base_offset,
                                         log_append_time_ms=info.log_append_time_ms,
                                         log_start_offset=log.log_start_offset))
        self._appended()
        return results

    def _appended(self) -> None:
        """After the leader wrote: move the high watermark, wake parked reads, report a failed disk."""
        self.state.advance_high_watermark(self.log.log_end_offset)
        self._readiness.appended(time.monotonic())   # (no rest inside the producers' retry horizon)
        self.purgatory.data_arrived()
        self.log_went_offline()

    def write_txn_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                         commit: bool) -> ProduceResult:
        """A transaction coordinator's COMMIT (`commit`) or ABORT marker for `producer_id`
        (WriteTxnMarkers), appended as the leader: Kafka's append with origin COORDINATOR,
        acks=all (the caller waits for the followers as for a produce). It ends the producer's
        transaction here, an abort goes to the `.txnindex`, and the last stable offset moves
        once the high watermark passes it. A retried marker of a transaction already ended is
        written again and answered NONE, as Kafka does (it ends nothing). Refused before any
        write: NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS (ISR below min.insync.replicas),
        INVALID_PRODUCER_EPOCH (an epoch below the producer's), TRANSACTION_COORDINATOR_FENCED
        (a coordinator epoch below its last marker's), KAFKA_STORAGE_ERROR."""
        state, log = self.state, self.log
        if not state.is_leader:
            return ProduceResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if len(state.isr) < self.config.min_insync_replicas:
            return ProduceResult(ErrorCode.NOT_ENOUGH_REPLICAS)
        marker = EndTransactionMarker(ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
                                      coordinator_epoch)
        try:
            info = log.append_end_txn_marker(marker, producer_id, producer_epoch, leader_epoch=state.leader_epoch)
        except KafkaError as e:
            if not isinstance(e, KafkaStorageError):   # (a failed disk is logged once, when the log went offline)
                self.logger.info("refused %s marker of producer %d: %s", marker.control_type.name, producer_id, e)
            self.log_went_offline()
            return ProduceResult(e.code, error_message=str(e))
        self._appended()
        return ProduceResult(ErrorCode.NONE, base_offset=info.base_offset, log_start_offset=log.log_start_offset)

    def awaits_replication(self, results: list[ProduceResult], required_offset: int) -> bool:
        """Whether an acks=all append must wait for followers before it is answered."""
        return (any(r.error is ErrorCode.NONE for r in results)
                and self.state.acks_all_outcome(required_offset, self.config.min_insync_replicas) is None)

    async def await_replication(self, required_offset: int, timeout_ms: int) -> ErrorCode:
        """The outcome of an acks=all append once the high watermark passes `required_offset`:
        NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas
        meanwhile, REQUEST_TIMED_OUT after `timeout_ms`, NOT_LEADER_OR_FOLLOWER on close."""
        state, min_insync = self.state, self.config.min_insync_replicas
        return await self.purgatory.await_replication(lambda: state.acks_all_outcome(required_offset, min_insync),
                                                      timeout_ms)

    # -- the leader: reads ---------------------------------------------------------------
    async def read(self, fetch_offset: int, max_bytes: int, max_wait_ms: int = 0) -> FetchResult:
        """Whole batches from `fetch_offset` up to the high watermark, as file regions. With
        `max_wait_ms`, an empty answer waits for an append (or the deadline) first. An offset
        between the high watermark and the log end gets an empty answer."""
        result = self.read_now(fetch_offset, max_bytes)
        if is_final(result, max_wait_ms):
            return result
        return await self.purgatory.await_data(lambda: self.read_now(fetch_offset, max_bytes), max_wait_ms, result)

    def read_now(self, fetch_offset: int, max_bytes: int,
                 isolation: FetchIsolation = FetchIsolation.HIGH_WATERMARK) -> FetchResult:
        """Whole batches up to the high watermark (read_uncommitted), the last stable offset
        (read_committed: with the aborted transactions among them) or the log end (the broker's
        own read: see `data_channel.encode_read`, with no committed window)."""
        if not self.state.is_leader:
            return FetchResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        log = self.log
        hw = self.high_watermark()
        lso = log.last_stable_offset(hw)
        end = hw if isolation is FetchIsolation.HIGH_WATERMARK else (
            lso if isolation is FetchIsolation.TXN_COMMITTED else log.log_end_offset)
        return read_batches(log, fetch_offset, max_bytes, end, hw, self.logger, last_stable_offset=lso,
                            read_committed=isolation is FetchIsolation.TXN_COMMITTED,
                            committed_window=isolation is not FetchIsolation.LOG_END)

    def replica_read(self, follower: int, leader_epoch: int, fetch_offset: int, max_bytes: int) -> FetchResult:
        """A follower's fetch at `fetch_offset`: it has everything before it (its log end).
        Answers whole batches up to the log end (not the high watermark) with the high
        watermark to take; refuses a follower of another leader epoch (FENCED_LEADER_EPOCH
        when it knows an older one, UNKNOWN_LEADER_EPOCH a newer one) or not assigned here."""
        state, log = self.state, self.log
        if not state.is_leader or follower not in state.followers:
            return FetchResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if leader_epoch >= 0 and leader_epoch != state.leader_epoch:
            return FetchResult(ErrorCode.FENCED_LEADER_EPOCH if leader_epoch < state.leader_epoch
                               else ErrorCode.UNKNOWN_LEADER_EPOCH)
        end = log.log_end_offset
        before = state.high_watermark
        hw = state.follower_fetched(follower, fetch_offset, end, _now_ms(), self.config.replica_lag_time_max_ms)
        if hw != before:
            self.high_watermark_moved()
        self.broker.maybe_alter_isr()
        return read_batches(log, fetch_offset, max_bytes, end, hw, self.logger, follower=follower)

    def list_offset(self, timestamp: int, isolation_level: int = 0) -> OffsetLookup:
        """ListOffsets: latest (read_committed, `isolation_level` 1: the last stable offset),
        earliest, max timestamp, or first offset at/after a timestamp."""
        if not self.state.is_leader:
            return OffsetLookup(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        hw = self.high_watermark()
        return lookup_offset(self.log, timestamp, hw, self.state.leader_epoch,
                             last_stable_offset=self.log.last_stable_offset(hw), isolation_level=isolation_level)

    def delete_records_now(self, offset: int) -> DeleteRecordsResult:
        """DeleteRecords on the leader (Kafka's `Partition.deleteRecordsOnLeader`): move the log
        start offset up to `offset` (-1: the high watermark) and delete the segments wholly
        below it. The low watermark answered is the log start offset (the only replica's).

        Not the leader: NOT_LEADER_OR_FOLLOWER. cleanup.policy without `delete`:
        POLICY_VIOLATION. Negative, or above the high watermark: OFFSET_OUT_OF_RANGE. An offset
        at or below the current log start changes nothing and answers it.
        """
        if not self.state.is_leader:
            return DeleteRecordsResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if not self.config.delete:
            return DeleteRecordsResult(ErrorCode.POLICY_VIOLATION)
        hw = self.high_watermark()
        target = hw if offset == HIGH_WATERMARK_OFFSET else offset
        if target < 0 or target > hw:
            self.logger.info("refused DeleteRecords to offset %d: the high watermark is %d", offset, hw)
            return DeleteRecordsResult(ErrorCode.OFFSET_OUT_OF_RANGE)
        self.wrote()
        try:
            self.log.maybe_increment_log_start_offset(target, hw, "ClientRecordDeletion")
            if self.log.delete_segments_below_log_start(hw):
                self.upkeep.schedule_file_deletion()
        except KafkaStorageError:
            self.log_went_offline()
            return DeleteRecordsResult(ErrorCode.KAFKA_STORAGE_ERROR)
        return DeleteRecordsResult(ErrorCode.NONE, self.log.log_start_offset)

    # -- a follower ------------------------------------------------------------------
    def append_as_follower(self, records: memoryview | bytes, leader_high_watermark: int,
                           leader_log_start_offset: int) -> FollowerAppendResult:
        """Append batches fetched from the leader exactly as they are (offsets, epochs and
        timestamps the leader's), note where each leader epoch starts, take the leader's
        high watermark (bounded by this log's end) and log start offset. Refused on a leader,
        or when the batches do not continue this log (the fetcher truncates or restarts)."""
        state, log = self.state, self.log
        if state.is_leader or state.leader < 0:
            return FollowerAppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        try:
            if len(records):
                self._readiness.appended(time.monotonic())
                info = log.append_as_follower(records)
                for entry in info.epoch_starts:
                    self._assign_leader_epoch(entry.epoch, entry.start_offset)
            end = log.log_end_offset
            hw = state.follower_high_watermark(leader_high_watermark, end)
            if leader_log_start_offset > log.log_start_offset:
                log.maybe_increment_log_start_offset(min(leader_log_start_offset, hw), hw, "LeaderOffsetIncremented")
        except KafkaStorageError:   # logged once, when the log went offline
            self.log_went_offline()
            return FollowerAppendResult(ErrorCode.KAFKA_STORAGE_ERROR, log.log_end_offset, state.high_watermark)
        except KafkaError as e:
            self.logger.warning("refused batches from leader %d: %s", state.leader, e)
            return FollowerAppendResult(e.code, log.log_end_offset, state.high_watermark)
        return FollowerAppendResult(ErrorCode.NONE, end, hw)

    def truncate_to(self, offset: int) -> int:
        """Drop every batch at or after `offset` (a follower's divergent tail, found with
        OffsetForLeaderEpoch) and the leader epochs starting there; returns the log end. An
        offline log (its dir failed) changes nothing: its appends are refused anyway."""
        log = self.log
        if log.offline:
            return log.log_end_offset
        self.wrote()
        if log.truncate_to(offset):
            self.logger.info("truncated the log to offset %d (log end now %d)", offset, log.log_end_offset)
        self._leader_epochs.truncate_from_end(log.log_end_offset)
        self.state.high_watermark = min(self.state.high_watermark, log.log_end_offset)
        return log.log_end_offset

    def truncate_fully_and_start_at(self, offset: int) -> int:
        """Start the log afresh at `offset` (the leader's log starts past this one's end);
        an offline log changes nothing."""
        if self.log.offline:
            return self.log.log_end_offset
        self.wrote()
        self.log.truncate_fully_and_start_at(offset)
        self._leader_epochs.truncate_from_end(0)
        self.state.high_watermark = min(self.state.high_watermark, offset)
        self.logger.info("started the log afresh at offset %d", offset)
        return self.log.log_end_offset

    def offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int) -> tuple[ErrorCode, int, int]:
        """OffsetForLeaderEpoch on the leader: (error, epoch, end offset) of the largest epoch
        at or below `leader_epoch`, where a follower's log stops agreeing with this one. A
        `current_leader_epoch` other than this leader's (-1: not checked) is fenced (KIP-320)."""
        state = self.state
        if not state.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1
        if current_leader_epoch >= 0 and current_leader_epoch != state.leader_epoch:
            return (ErrorCode.FENCED_LEADER_EPOCH if current_leader_epoch < state.leader_epoch
                    else ErrorCode.UNKNOWN_LEADER_EPOCH), -1, -1
        epoch, end = self._leader_epochs.end_offset_for(leader_epoch, self.log.log_end_offset)
        return ErrorCode.NONE, epoch, end

    def latest_leader_epoch(self) -> int:
        """The epoch of this log's last batch's leader (-1: none), for OffsetForLeaderEpoch."""
        latest = self._leader_epochs.latest_epoch
        return -1 if latest is None else latest

    # -- dormancy (replica.dormant.after.ms) ----------------------------------------------
    def wrote(self) -> None:
        """Something changed the log or the role: the replica is busy, not idle."""
        self._readiness.wrote(time.monotonic())

    def quiet(self) -> bool:
        """Whether this replica could close now and lose nothing a reader of its files needs:
        no write under way, and every replica has everything (a leader's high watermark is its
        log end, which its in-sync followers have reached; a follower has what its leader told
        it is committed)."""
        state, log = self.state, self.log
        if log.offline or self.upkeep.cleaning or self.purgatory.awaiting_replication:
            return False
        end = log.log_end_offset
        if state.is_leader:
            now, lag_ms = _now_ms(), self.config.replica_lag_time_max_ms
            catching_up = any(p.last_fetch_ms and now - p.last_fetch_ms <= lag_ms and p.log_end_offset < end
                              for p in state.followers.values())   # (one outside the ISR, say)
            return (state.pending_isr is None and not self.broker.proposing and not catching_up
                    and self.high_watermark() == end)
        return state.leader >= 0 and state.high_watermark == end

    def idle_for_ms(self) -> float:
        """Milliseconds since the last write; 0 while the replica is not quiet; negative (minus the
        milliseconds left) while it appended within replica.dormant.retry.horizon.ms
        (`rest_horizon.py`): neither the dormancy timer nor a round making room under
        replica.max.live.processes rests it then."""
        return self._readiness.idle_for_ms(time.monotonic(), self.quiet())


def _now_ms() -> int:
    return int(time.time() * 1000)
