"""The group coordinator of one broker: hosts the group state machine and the committed
offsets of the `__consumer_offsets` partitions this broker leads, and answers the group
membership requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and the group timers.

It runs inside the broker's front end, next to the client connections and the data channels
to the local replicas, so a heartbeat or an offset commit costs no Ray call. The pure parts
do the deciding: `GroupCoordinatorState` (groups, members, rebalances, timers) and
`OffsetStore` (committed offsets); this class feeds them requests and timer ticks and writes
the group metadata they ask to `__consumer_offsets` before answering (Kafka's rule: a write is
answered once written with acks=all). Two collaborators do the rest: `OffsetsPartitions`
(offsets_loading.py) rebuilds the state from the log when this broker takes a partition over
(COORDINATOR_LOAD_IN_PROGRESS meanwhile; NOT_COORDINATOR for groups it does not own), and
`OffsetRequests` (offset_requests.py) serves OffsetCommit, OffsetFetch, OffsetDelete,
DeleteGroups and the expiry of offsets.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Protocol

from rafka.common.config import BrokerConfig
from rafka.common.errors import ErrorCode
from rafka.common.logging_util import Prefixed
from rafka.common.types import OFFSETS_TOPIC
from rafka.coordinator.group import offsets_topic
from rafka.coordinator.group.group_messages import (
    CommittedOffset, HeartbeatRequest, HeartbeatResponse, JoinRequest, JoinResponse, LeaveRequest, LeaveResponse,
    Outcome, SyncRequest, SyncResponse,
)
from rafka.coordinator.group.group_metadata import GroupConfig
from rafka.coordinator.group.group_state import GroupCoordinatorState
from rafka.coordinator.group.offset_requests import (COMMIT_APPEND_ERRORS, OffsetRequests, TopicPartitionKey,
                                                     oversized_metadata)
from rafka.coordinator.group.offset_store import OffsetStore
from rafka.coordinator.group.offsets_loading import OffsetsPartitions
from rafka.coordinator.group.txn_offsets import PendingTxnOffsets

log = logging.getLogger(__name__)

# How an error of the write of group metadata is answered to the JoinGroup/SyncGroup that waited
# on it (Kafka's GroupMetadataManager.storeGroup); other errors are answered as they are.
_STORE_GROUP_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


@dataclass(frozen=True)
class GroupSettings:
    """The broker configs the coordinator applies (Kafka's names in the comments)."""

    partitions: int = 8                         # offsets.topic.num.partitions
    replication_factor: int = 3                 # offsets.topic.replication.factor (capped at the live brokers)
    retention_ms: int = 10_080 * 60_000         # offsets.retention.minutes
    retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    commit_timeout_ms: int = 5000               # offsets.commit.timeout.ms
    metadata_max_bytes: int = 4096              # offset.metadata.max.bytes
    load_retry_backoff_ms: int = 200            # first wait before a failed load is retried (rafka's own)
    group: GroupConfig = GroupConfig()

    @classmethod
    def from_config(cls, config: BrokerConfig) -> "GroupSettings":
        """The settings a broker config gives."""
        return cls(
            partitions=config.offsets_topic_num_partitions,
            replication_factor=config.offsets_topic_replication_factor,
            retention_ms=config.offsets_retention_minutes * 60_000,
            retention_check_interval_ms=config.offsets_retention_check_interval_ms,
            commit_timeout_ms=config.offsets_commit_timeout_ms,
            metadata_max_bytes=config.offset_metadata_max_bytes,
            group=GroupConfig(min_session_timeout_ms=config.group_min_session_timeout_ms,
                              max_session_timeout_ms=config.group_max_session_timeout_ms,
                              initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                              max_size=config.group_max_size))


class OffsetsStorage(Protocol):
    """The `__consumer_offsets` partitions as the coordinator sees them."""

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        """Append one record batch with acks=all; the error of the write."""

    def warm(self, partition: int) -> bool:
        """A group of the partition is about to write: have its replica running (rafka rests
        idle replicas; Kafka's are always open), without waiting. False while it rests (or wakes)."""

    def read(self, partition: int) -> AsyncIterator[bytes]:
        """The partition's record batches from its log start to its log end, not its high
        watermark (Kafka's GroupMetadataManager loads with FetchIsolation.LOG_END): a new leader's
        high watermark lags its log end until its followers fetch from it, and the offsets and
        group metadata in between were acknowledged to clients by the leader before it."""



class GroupCoordinator:
    """One broker's group coordinator (see the module docstring). Not thread-safe: it runs on the
    front end's event loop, and each await on a write to `__consumer_offsets` lets other
    requests in."""

    def __init__(self, broker_id: int, settings: GroupSettings, storage: OffsetsStorage,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.broker_id = broker_id
        self.settings = settings
        self._storage = storage
        self._clock_ms = clock_ms
        self._log = Prefixed(log, f"[GroupCoordinator broker={broker_id}]")
        self.state = GroupCoordinatorState(settings.group)
        self.offsets = OffsetStore()
        self.txn_offsets = PendingTxnOffsets()
        self._pending: dict[int, asyncio.Future] = {}
        self._token_groups: dict[int, str] = {}  # pending token -> the group its request is for
        # group id -> done once its metadata write under way (and what follows from it) is over
        self._writing: dict[str, asyncio.Future] = {}
        self._next_token = 0
        self._timer_wake = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._ticks_writing: set[asyncio.Future] = set()   # timer ticks whose outcome is being written
        self.offsets_partitions = OffsetsPartitions(settings, storage, self.state, self.offsets, clock_ms=clock_ms,
                                                    complete=self._complete, loads_ended=self._timer_wake,
                                                    log=self._log, txn_offsets=self.txn_offsets)
        self._offset_requests = OffsetRequests(settings, storage, self.state, self.offsets,
                                               check=self.offsets_partitions.check, clock_ms=clock_ms, log=self._log)

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        """Start the timer loop and the offset-expiry loop (call from the running loop)."""
        if not self._tasks:
            self._tasks = [asyncio.ensure_future(self._timer_loop()),
                           asyncio.ensure_future(self._offset_requests.expiry_loop())]

    async def stop(self) -> None:
        for task in [*self._tasks, *self._ticks_writing, *self.offsets_partitions.loading_tasks()]:
            task.cancel()
        self._tasks = []
        for future in self._pending.values():
            if not future.done():
                future.cancel()

    # -- ownership -------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return self.offsets_partitions.partition_for(group_id)

    def set_led_partitions(self, partitions: set[int]) -> None:
        """The `__consumer_offsets` partitions this broker now leads: load new ones in the
        background, drop the groups (and held transactional offsets) of ones it lost."""
        lost = self.offsets_partitions.led() - partitions
        self.offsets_partitions.set_led_partitions(partitions)
        for partition in lost:
            self.txn_offsets.unload_partition(partition)

    def check(self, group_id: str) -> ErrorCode:
        """NONE when this broker coordinates `group_id` and has loaded it."""
        return self.offsets_partitions.check(group_id)

    # -- membership ----------------------------------------------------------------
    def warm(self, group_id: str) -> bool:
        """A member of `group_id` looks for its coordinator or joins: the group will write its
        metadata (and offsets) soon, so its offsets partition's replica is woken now if it rests.
        False while that replica rests (or wakes)."""
        return self._storage.warm(self.partition_for(group_id))

    async def join(self, request: JoinRequest) -> JoinResponse:
        self.warm(request.group_id)
        code = self.check(request.group_id)
        if code is not ErrorCode.NONE:
            return JoinResponse(code, member_id=request.member_id)
        return await self._call(request.group_id, lambda token, now: self.state.join(token, request, now))

    async def sync(self, request: SyncRequest) -> SyncResponse:
        code = self.check(request.group_id)
        if code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return SyncResponse(ErrorCode.REBALANCE_IN_PROGRESS)  # Kafka: the member rejoins once loaded
        if code is not ErrorCode.NONE:
            return SyncResponse(code)
        writing = self._writing.get(request.group_id)
        if writing is not None:
            # As Kafka's CompletingRebalance until storeGroup's callback: no member gets an
            # assignment before it is written (a follower's SyncGroup that comes while the
            # leader's is being written is answered with it, after it; or with the failure).
            await asyncio.shield(writing)
        return await self._call(request.group_id, lambda token, now: self.state.sync(token, request, now))

    async def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        code = self.check(request.group_id)
        if code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return HeartbeatResponse(ErrorCode.NONE)  # Kafka answers blindly while the group loads
        if code is not ErrorCode.NONE:
            return HeartbeatResponse(code)
        return await self._call(request.group_id, lambda token, now: self.state.heartbeat(token, request, now))

    async def leave(self, request: LeaveRequest) -> LeaveResponse:
        code = self.check(request.group_id)
        if code is not ErrorCode.NONE:
            return LeaveResponse(code, ())
        return await self._call(request.group_id, lambda token, now: self.state.leave(token, request, now))

    async def _call(self, group_id: str, start: Callable[[int, int], Outcome]):
        token = self._next_token
        self._next_token += 1
        future = asyncio.get_running_loop().create_future()
        self._pending[token] = future
        self._token_groups[token] = group_id
        try:
            await self._apply(start(token, self._clock_ms()))
            return await future
        finally:
            self._pending.pop(token, None)
            self._token_groups.pop(token, None)

    async def _apply(self, outcome: Outcome, wake_timers: bool = True) -> None:
        """Write the group metadata the outcome asks for, then answer its completions; then
        let the timer loop look at the (maybe earlier) next deadline.

        A failed write is never answered as a success (Kafka's storeGroup callback): the
        JoinGroup/SyncGroup answers of that group that carried no error get the write's error
        (mapped as Kafka maps it), and the group forgets the assignment and rebalances."""
        groups = {snapshot.group_id for snapshot in outcome.persist}
        if not groups:
            self._complete(outcome)
        else:
            writing = asyncio.get_running_loop().create_future()
            for group_id in groups:
                self._writing[group_id] = writing
            try:
                await self._write_and_complete(outcome)
            finally:
                for group_id in groups:
                    if self._writing.get(group_id) is writing:
                        del self._writing[group_id]
                writing.set_result(None)
        if wake_timers:
            self._timer_wake.set()

    async def _write_and_complete(self, outcome: Outcome) -> None:
        """`_apply`'s write of the group metadata, then the outcome's answers (a SyncGroup of
        the group that comes meanwhile waits: see `sync`)."""
        failed: dict[str, tuple[ErrorCode, int]] = {}  # group id -> (answer, generation written)
        by_partition: dict[int, list] = {}
        for snapshot in outcome.persist:
            by_partition.setdefault(self.partition_for(snapshot.group_id), []).extend(
                offsets_topic.records_for_group(snapshot))
        for partition, pairs in by_partition.items():
            try:
                code = await self._storage.append(partition,
                                                  offsets_topic.encode_offsets_batch(pairs, self._clock_ms()))
            except Exception as e:  # noqa: BLE001 - a lost replica: the write failed, the group goes on
                self._log.warning("writing group metadata to %s-%d failed: %r", OFFSETS_TOPIC, partition, e)
                code = ErrorCode.UNKNOWN_SERVER_ERROR
            written = [s for s in outcome.persist if self.partition_for(s.group_id) == partition]
            if code is not ErrorCode.NONE:
                self._log.warning("could not store group metadata in %s-%d: %s", OFFSETS_TOPIC, partition,
                                  code.name)
                for snapshot in written:
                    failed[snapshot.group_id] = (_STORE_GROUP_ERRORS.get(code, code), snapshot.generation_id)
            else:
                for snapshot in written:
                    self.offsets.store_group(snapshot)
        self._complete(outcome, {g: answer for g, (answer, _) in failed.items()})
        for group_id, (_, generation_id) in failed.items():
            await self._apply(self.state.metadata_not_stored(group_id, generation_id, self._clock_ms()),
                              wake_timers=False)

    def _complete(self, outcome: Outcome, failed: dict[str, ErrorCode] | None = None) -> None:
        for token, response in outcome.completions:
            future = self._pending.get(token)
            if future is None or future.done():
                continue
            error = (failed or {}).get(self._token_groups.get(token, ""))
            if error is not None and isinstance(response, (JoinResponse, SyncResponse)) \
                    and response.error is ErrorCode.NONE:
                response = dataclasses.replace(response, error=error) if isinstance(response, JoinResponse) \
                    else SyncResponse(error)
            future.set_result(response)

    async def _timer_loop(self) -> None:
        """Expire what is due (the state changes at once), then write and answer it in a task of
        its own: a tick's write to a slow or waking offsets partition must not hold the next
        ticks, whose joins would otherwise complete after their members' clients gave up."""
        while True:
            deadline = self.state.next_deadline_ms()
            timeout = None if deadline is None else max(0.001, (deadline - self._clock_ms()) / 1000)
            try:
                await asyncio.wait_for(self._timer_wake.wait(), timeout)
            except asyncio.TimeoutError:
                pass
            self._timer_wake.clear()
            try:
                outcome = self.state.tick(self._clock_ms())
            except Exception:  # noqa: BLE001 - one bad tick must not stop the timers
                self._log.exception("group timer tick failed")
                continue
            if outcome.persist:
                task = asyncio.ensure_future(self._apply(outcome, wake_timers=False))
                self._ticks_writing.add(task)
                task.add_done_callback(self._tick_written)
            else:
                self._complete(outcome)

    def _tick_written(self, task: asyncio.Future) -> None:
        self._ticks_writing.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._log.error("writing a group timer tick's outcome failed", exc_info=task.exception())


    # -- offsets (OffsetRequests) ------------------------------------------------------
    async def commit_offsets(self, group_id: str, member_id: str, generation_id: int,
                             group_instance_id: str | None,
                             offsets: dict[TopicPartitionKey, CommittedOffset]) -> dict[TopicPartitionKey, ErrorCode]:
        """OffsetCommit: validate the member, write the commits with acks=all, then cache them."""
        return await self._offset_requests.commit_offsets(group_id, member_id, generation_id, group_instance_id,
                                                          offsets)

    def fetch_offsets(self, group_id: str, partitions: list[TopicPartitionKey] | None
                      ) -> tuple[ErrorCode, dict[TopicPartitionKey, CommittedOffset | None]]:
        """OffsetFetch: the committed offsets (None: nothing committed) or a group-level error."""
        return self._offset_requests.fetch_offsets(group_id, partitions)

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        return await self._offset_requests.delete_groups(group_ids)

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartitionKey]) -> ErrorCode:
        """OffsetDelete: only while no member of the group consumes (Empty group)."""
        return await self._offset_requests.delete_offsets(group_id, partitions)

    async def expire_offsets(self) -> int:
        """Remove offsets past `offsets.retention.minutes` of empty groups; returns how many."""
        return await self._offset_requests.expire_offsets()

    # -- transactional offsets (TxnOffsetCommit) -----------------------------------------
    async def commit_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int, member_id: str,
                                 generation_id: int, group_instance_id: str | None,
                                 offsets: dict[TopicPartitionKey, CommittedOffset]) -> dict[TopicPartitionKey, ErrorCode]:
        """TxnOffsetCommit: validate the group and member (KIP-447), write the commits as the
        producer's transactional batch (acks=all), then hold them until the transaction's
        marker on the group's partition (`complete_txn_offsets`)."""
        code = self.check(group_id)
        if code is ErrorCode.NONE:
            code = self.state.validate_txn_offset_commit(group_id, member_id, generation_id, group_instance_id,
                                                         self._clock_ms())
        if code is not ErrorCode.NONE:
            return {tp: code for tp in offsets}
        results = oversized_metadata(offsets, self.settings.metadata_max_bytes)
        accepted = {tp: o for tp, o in offsets.items() if tp not in results}
        if accepted:
            partition = self.partition_for(group_id)
            sequence = self.txn_offsets.next_sequence(partition, producer_id, producer_epoch)
            batch = offsets_topic.encode_offsets_batch(offsets_topic.records_for_commit(group_id, accepted),
                                                       self._clock_ms(),
                                                       transaction=(producer_id, producer_epoch, sequence))
            try:
                written = await asyncio.wait_for(self._storage.append(partition, batch),
                                                 self.settings.commit_timeout_ms / 1000)
            except asyncio.TimeoutError:
                written = ErrorCode.REQUEST_TIMED_OUT
            except Exception as e:  # noqa: BLE001 - the write failed; the producer is told
                self._log.warning("writing transactional offsets of group %s failed: %r", group_id, e)
                written = ErrorCode.UNKNOWN_SERVER_ERROR
            if written is ErrorCode.NONE:
                self.txn_offsets.written(partition, producer_id, producer_epoch, len(accepted))
                self.txn_offsets.add(partition, producer_id, group_id, accepted)
            mapped = ErrorCode.NONE if written is ErrorCode.NONE else COMMIT_APPEND_ERRORS.get(written, written)
            results.update({tp: mapped for tp in accepted})
        return results

    def complete_txn_offsets(self, partition: int, producer_id: int, commit: bool) -> None:
        """The transaction's marker is written on `__consumer_offsets`-`partition`: its held
        offsets become committed (COMMIT) or are dropped (ABORT)."""
        for group_id, offsets in self.txn_offsets.complete(partition, producer_id, commit).items():
            self.offsets.commit(group_id, offsets)
