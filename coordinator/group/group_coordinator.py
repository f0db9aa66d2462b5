"""The group coordinator of one broker: hosts the group state machine and the committed
offsets of the `__consumer_offsets` partitions this broker leads.

It runs inside the broker's front end, next to the client connections and the data channels
to the local replicas, so a heartbeat or an offset commit costs no Ray call. The pure parts
do the deciding: `GroupCoordinatorState` (groups, members, rebalances, timers) and
`OffsetStore` (committed offsets); this class feeds them requests and timer ticks, writes
what they ask to `__consumer_offsets` before answering (Kafka's rule: a commit is answered
once written with acks=all), and rebuilds them from the log when it takes a partition over
(COORDINATOR_LOAD_IN_PROGRESS meanwhile; NOT_COORDINATOR for groups it does not own).
"""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import time
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Protocol

from rafka.common.config import BrokerConfig
from rafka.common.errors import ErrorCode
from rafka.common.logging_util import Prefixed
from rafka.common.types import OFFSETS_TOPIC
from rafka.coordinator.group import offsets_records as records
from rafka.coordinator.group.group_messages import (
    CommittedOffset, HeartbeatRequest, HeartbeatResponse, JoinRequest, JoinResponse, LeaveRequest, LeaveResponse,
    Outcome, SyncRequest, SyncResponse,
)
from rafka.coordinator.group.group_metadata import STABLE, GroupConfig
from rafka.coordinator.group.group_state import GroupCoordinatorState
from rafka.coordinator.group.offset_store import OffsetStore

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]

# How an error of the append to __consumer_offsets is reported to a committing client
# (Kafka's GroupMetadataManager.storeOffsets / storeGroup).
_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}
# A failed load of a partition is retried after load_retry_backoff_ms, doubling up to this.
_MAX_LOAD_RETRY_BACKOFF_MS = 5000

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

    def read(self, partition: int) -> AsyncIterator[bytes]:
        """The partition's record batches from its log start to its log end, not its high
        watermark (Kafka's GroupMetadataManager loads with FetchIsolation.LOG_END): a new leader's
        high watermark lags its log end until its followers fetch from it, and the offsets and
        group metadata in between were acknowledged to clients by the leader before it."""


class GroupCoordinator:
    def __init__(self, broker_id: int, settings: GroupSettings, storage: OffsetsStorage,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.broker_id = broker_id
        self.settings = settings
        self._storage = storage
        self._clock_ms = clock_ms
        self._log = Prefixed(log, f"[GroupCoordinator broker={broker_id}]")
        self.state = GroupCoordinatorState(settings.group)
        self.offsets = OffsetStore()
        self._owned: set[int] = set()      # loaded partitions
        self._loading: dict[int, asyncio.Task] = {}
        self._pending: dict[int, asyncio.Future] = {}
        self._token_groups: dict[int, str] = {}  # pending token -> the group its request is for
        # group id -> done once its metadata write under way (and what follows from it) is over
        self._writing: dict[str, asyncio.Future] = {}
        self._next_token = 0
        self._timer_wake = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        """Start the timer loop and the offset-expiry loop (call from the running loop)."""
        if not self._tasks:
            self._tasks = [asyncio.ensure_future(self._timer_loop()),
                           asyncio.ensure_future(self._expiry_loop())]

    async def stop(self) -> None:
        for task in [*self._tasks, *self._loading.values()]:
            task.cancel()
        self._tasks = []
        for future in self._pending.values():
            if not future.done():
                future.cancel()

    def partition_for(self, group_id: str) -> int:
        return records.partition_for(group_id, self.settings.partitions)

    def set_led_partitions(self, partitions: set[int]) -> None:
        """The `__consumer_offsets` partitions this broker now leads: load new ones in the
        background, drop the groups of ones it lost."""
        for partition in sorted(partitions - self._owned - set(self._loading)):
            self._loading[partition] = asyncio.ensure_future(self._load(partition))
        for partition in sorted((self._owned | set(self._loading)) - partitions):
            task = self._loading.pop(partition, None)
            if task is not None:
                task.cancel()
            self._owned.discard(partition)
            self._unload(partition)

    async def _load(self, partition: int) -> None:
        """Load `partition` until it is loaded or no longer led here (this task is cancelled).

        A read can fail for a while after this broker is told it leads the partition: after a
        restart the front end may hear of the leader before the replica has taken leadership
        (NOT_LEADER_OR_FOLLOWER). A failed load is retried with backoff, its groups answering
        COORDINATOR_LOAD_IN_PROGRESS meanwhile, instead of NOT_COORDINATOR until the next
        leadership change, which may never come."""
        backoff_ms = self.settings.load_retry_backoff_ms
        try:
            for attempt in itertools.count(1):
                try:
                    await self._load_once(partition)
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # noqa: BLE001 - retried while the partition is led here
                    if attempt == 1:
                        self._log.exception("failed to load %s-%d; retrying", OFFSETS_TOPIC, partition)
                    else:
                        self._log.warning("failed to load %s-%d (attempt %d): %r", OFFSETS_TOPIC, partition,
                                          attempt, e)
                await asyncio.sleep(backoff_ms / 1000)
                backoff_ms = min(backoff_ms * 2, _MAX_LOAD_RETRY_BACKOFF_MS)
        finally:
            self._loading.pop(partition, None)
            self._timer_wake.set()

    async def _load_once(self, partition: int) -> None:
        """Replay the partition's log into the offsets and groups, then own it. Raises when the
        log cannot be read; records that cannot be parsed are skipped with a warning."""
        started = time.monotonic()
        skipped = 0

        def skip(reason: str) -> None:
            # One unreadable record (junk, or a bug of ours) must not leave the partition's
            # groups without a coordinator for good: skip it, say so, load the rest.
            nonlocal skipped
            skipped += 1
            self._log.warning("skipped an unreadable record of %s-%d: %s", OFFSETS_TOPIC, partition, reason)

        count = 0
        open_transactions: dict = {}
        async for batch in self._storage.read(partition):
            for key, value in records.replay(batch, open_transactions=open_transactions, on_unreadable=skip):
                try:
                    self.offsets.apply(key, value)
                except records.OffsetsRecordError as e:
                    skip(str(e))
                    continue
                count += 1
        now = self._clock_ms()
        for group_id in self.offsets.groups():
            snapshot = self.offsets.group_snapshot(group_id)
            if snapshot is not None and self.partition_for(group_id) == partition:
                self.state.load(snapshot, now)
        self._owned.add(partition)
        self._log.info("loaded %s-%d: %d records (%d unreadable, skipped) in %.3f s", OFFSETS_TOPIC, partition,
                       count, skipped, time.monotonic() - started)

    def _unload(self, partition: int) -> None:
        groups = self.offsets.unload_partition(partition, self.settings.partitions)
        groups += [g for g in self.state.group_ids() if self.partition_for(g) == partition and g not in groups]
        self._complete(self.state.unload(groups))
        self._log.info("unloaded %s-%d (%d groups)", OFFSETS_TOPIC, partition, len(groups))

    # -- ownership -------------------------------------------------------------------
    def check(self, group_id: str) -> ErrorCode:
        """NONE when this broker coordinates `group_id` and has loaded it."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        partition = self.partition_for(group_id)
        if partition in self._owned:
            return ErrorCode.NONE
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NOT_COORDINATOR

    # -- membership ----------------------------------------------------------------
    async def join(self, request: JoinRequest) -> JoinResponse:
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
                records.records_for_group(snapshot))
        for partition, pairs in by_partition.items():
            try:
                code = await self._storage.append(partition,
                                                  records.encode_offsets_batch(pairs, self._clock_ms()))
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
        while True:
            deadline = self.state.next_deadline_ms()
            timeout = None if deadline is None else max(0.001, (deadline - self._clock_ms()) / 1000)
            try:
                await asyncio.wait_for(self._timer_wake.wait(), timeout)
            except asyncio.TimeoutError:
                pass
            self._timer_wake.clear()
            try:
                await self._apply(self.state.tick(self._clock_ms()), wake_timers=False)
            except Exception:  # noqa: BLE001 - one bad tick must not stop the timers
                self._log.exception("group timer tick failed")

    # -- offsets ---------------------------------------------------------------------
    async def commit_offsets(self, group_id: str, member_id: str, generation_id: int,
                             group_instance_id: str | None,
                             offsets: dict[TopicPartitionKey, CommittedOffset]) -> dict[TopicPartitionKey, ErrorCode]:
        """OffsetCommit: validate the member, write the commits with acks=all, then cache them."""
        code = self.check(group_id)
        if code is ErrorCode.NONE:
            code = self.state.validate_offset_commit(group_id, member_id, generation_id, group_instance_id,
                                                     self._clock_ms())
        if code is not ErrorCode.NONE:
            return {tp: code for tp in offsets}
        results = {tp: ErrorCode.OFFSET_METADATA_TOO_LARGE for tp, o in offsets.items()
                   if o.metadata is not None and len(o.metadata.encode()) > self.settings.metadata_max_bytes}
        accepted = {tp: o for tp, o in offsets.items() if tp not in results}
        if accepted:
            batch = records.encode_offsets_batch(records.records_for_commit(group_id, accepted), self._clock_ms())
            try:
                written = await asyncio.wait_for(self._storage.append(self.partition_for(group_id), batch),
                                                 self.settings.commit_timeout_ms / 1000)
            except asyncio.TimeoutError:
                written = ErrorCode.REQUEST_TIMED_OUT
            except Exception as e:  # noqa: BLE001 - the write failed; the member is told, not disconnected
                self._log.warning("writing offsets of group %s failed: %r", group_id, e)
                written = ErrorCode.UNKNOWN_SERVER_ERROR
            if written is ErrorCode.NONE:
                self.offsets.commit(group_id, accepted)
            mapped = _APPEND_ERRORS.get(written, ErrorCode.UNKNOWN_SERVER_ERROR) \
                if written is not ErrorCode.NONE else ErrorCode.NONE
            results.update({tp: mapped for tp in accepted})
        return results

    def fetch_offsets(self, group_id: str, partitions: list[TopicPartitionKey] | None
                      ) -> tuple[ErrorCode, dict[TopicPartitionKey, CommittedOffset | None]]:
        """OffsetFetch: the committed offsets (None: nothing committed) or a group-level error."""
        code = self.check(group_id)
        if code is not ErrorCode.NONE:
            return code, {}
        found = self.offsets.fetch(group_id, partitions)
        if partitions is None:
            return ErrorCode.NONE, dict(found)
        return ErrorCode.NONE, {tp: found.get(tp) for tp in partitions}

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        results: dict[str, ErrorCode] = {}
        ours = []
        for group_id in group_ids:
            code = self.check(group_id)
            if code is ErrorCode.NONE:
                ours.append(group_id)
            else:
                results[group_id] = code
        if ours:
            deleted = self.state.delete_groups(ours, self._clock_ms())
            for group_id, code in deleted.items():
                if code is ErrorCode.GROUP_ID_NOT_FOUND and self.offsets.fetch(group_id, None):
                    code = ErrorCode.NONE  # a simple consumer's group: offsets only
                if code is ErrorCode.NONE:
                    code = await self._write_tombstones(group_id, self.offsets.delete_group(group_id))
                results[group_id] = code
        return results

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartitionKey]) -> ErrorCode:
        """OffsetDelete: only while no member of the group consumes (Empty group)."""
        code = self.check(group_id)
        if code is not ErrorCode.NONE:
            return code
        if not self.state.is_empty_or_absent(group_id):
            return ErrorCode.NON_EMPTY_GROUP
        return await self._write_tombstones(group_id, self.offsets.delete_offsets(group_id, partitions,
                                                                                  group_is_empty=True))

    async def _write_tombstones(self, group_id: str, pairs: list) -> ErrorCode:
        if not pairs:
            return ErrorCode.NONE
        written = await self._storage.append(self.partition_for(group_id),
                                             records.encode_offsets_batch(pairs, self._clock_ms()))
        return ErrorCode.NONE if written is ErrorCode.NONE else _APPEND_ERRORS.get(written, ErrorCode.UNKNOWN_SERVER_ERROR)

    async def _expiry_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.retention_check_interval_ms / 1000)
            try:
                await self.expire_offsets()
            except Exception:  # noqa: BLE001
                self._log.exception("offset expiry failed")

    async def expire_offsets(self) -> int:
        """Remove offsets past `offsets.retention.minutes` of empty groups; returns how many."""
        now = self._clock_ms()
        tombstones = self.offsets.expire(now, self.settings.retention_ms, self.state.is_empty_or_absent,
                                         is_stable=lambda g: self.state.state_name(g) == STABLE)
        by_partition: dict[int, list] = {}
        for key, value in tombstones:
            decoded = records.decode_key(key)
            by_partition.setdefault(self.partition_for(decoded.group), []).append((key, value))
            if isinstance(decoded, records.GroupKey) and self.state.is_empty_or_absent(decoded.group):
                self.state.delete_groups([decoded.group], now)  # an empty group without offsets is dead
        for partition, pairs in by_partition.items():
            await self._storage.append(partition, records.encode_offsets_batch(pairs, self._clock_ms()))
        if tombstones:
            self._log.info("expired %d committed offsets", len(tombstones))
        return len(tombstones)
