"""The offset requests of the group coordinator of one broker: OffsetCommit (written to
`__consumer_offsets` with acks=all before it is answered), OffsetFetch, OffsetDelete and
DeleteGroups, and the expiry of offsets past `offsets.retention.minutes`, with append errors
answered as Kafka's GroupMetadataManager answers them.

Runs on the front end's event loop with its `GroupCoordinator`. Each request is refused first
(NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) when the group's partition is not loaded here.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable

from rafka.common.errors import ErrorCode
from rafka.coordinator.group import offsets_records as records
from rafka.coordinator.group import offsets_topic
from rafka.coordinator.group.group_messages import CommittedOffset
from rafka.coordinator.group.group_metadata import STABLE
from rafka.coordinator.group.group_state import GroupCoordinatorState
from rafka.coordinator.group.offset_store import OffsetStore

if TYPE_CHECKING:
    from rafka.coordinator.group.group_coordinator import GroupSettings, OffsetsStorage

TopicPartitionKey = tuple[str, int]

# How an error of the append to __consumer_offsets is reported to a committing client
# (Kafka's GroupMetadataManager.storeOffsets / storeGroup).
COMMIT_APPEND_ERRORS = {
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



def oversized_metadata(offsets: dict[TopicPartitionKey, CommittedOffset], max_bytes: int
                       ) -> dict[TopicPartitionKey, ErrorCode]:
    """OFFSET_METADATA_TOO_LARGE for each commit whose metadata is over `offset.metadata.max.bytes`."""
    return {tp: ErrorCode.OFFSET_METADATA_TOO_LARGE for tp, o in offsets.items()
            if o.metadata is not None and len(o.metadata.encode()) > max_bytes}

class OffsetRequests:
    """Committed offsets as clients ask for them: `check(group_id)` says whether the group is
    coordinated and loaded here; `offsets` is the cache of what the log holds, updated only
    once a write succeeded; `state` says which groups are empty."""

    def __init__(self, settings: GroupSettings, storage: OffsetsStorage, state: GroupCoordinatorState,
                 offsets: OffsetStore, *, check: Callable[[str], ErrorCode], clock_ms: Callable[[], int],
                 log: logging.LoggerAdapter) -> None:
        self._settings = settings
        self._storage = storage
        self._state = state
        self._offsets = offsets
        self._check = check
        self._clock_ms = clock_ms
        self._log = log

    def _partition_for(self, group_id: str) -> int:
        return offsets_topic.partition_for(group_id, self._settings.partitions)

    async def commit_offsets(self, group_id: str, member_id: str, generation_id: int,
                             group_instance_id: str | None,
                             offsets: dict[TopicPartitionKey, CommittedOffset]) -> dict[TopicPartitionKey, ErrorCode]:
        """OffsetCommit: validate the member, write the commits with acks=all, then cache them."""
        code = self._check(group_id)
        if code is ErrorCode.NONE:
            code = self._state.validate_offset_commit(group_id, member_id, generation_id, group_instance_id,
                                                      self._clock_ms())
        if code is not ErrorCode.NONE:
            return {tp: code for tp in offsets}
        results = oversized_metadata(offsets, self._settings.metadata_max_bytes)
        accepted = {tp: o for tp, o in offsets.items() if tp not in results}
        if accepted:
            batch = offsets_topic.encode_offsets_batch(offsets_topic.records_for_commit(group_id, accepted),
                                                       self._clock_ms())
            try:
                written = await asyncio.wait_for(self._storage.append(self._partition_for(group_id), batch),
                                                 self._settings.commit_timeout_ms / 1000)
            except asyncio.TimeoutError:
                written = ErrorCode.REQUEST_TIMED_OUT
            except Exception as e:  # noqa: BLE001 - the write failed; the member is told, not disconnected
                self._log.warning("writing offsets of group %s failed: %r", group_id, e)
                written = ErrorCode.UNKNOWN_SERVER_ERROR
            if written is ErrorCode.NONE:
                self._offsets.commit(group_id, accepted)
            mapped = COMMIT_APPEND_ERRORS.get(written, ErrorCode.UNKNOWN_SERVER_ERROR) \
                if written is not ErrorCode.NONE else ErrorCode.NONE
            results.update({tp: mapped for tp in accepted})
        return results

    def fetch_offsets(self, group_id: str, partitions: list[TopicPartitionKey] | None
                      ) -> tuple[ErrorCode, dict[TopicPartitionKey, CommittedOffset | None]]:
        """OffsetFetch: the committed offsets (None: nothing committed) or a group-level error."""
        code = self._check(group_id)
        if code is not ErrorCode.NONE:
            return code, {}
        found = self._offsets.fetch(group_id, partitions)
        if partitions is None:
            return ErrorCode.NONE, dict(found)
        return ErrorCode.NONE, {tp: found.get(tp) for tp in partitions}

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        results: dict[str, ErrorCode] = {}
        ours = []
        for group_id in group_ids:
            code = self._check(group_id)
            if code is ErrorCode.NONE:
                ours.append(group_id)
            else:
                results[group_id] = code
        if ours:
            deleted = self._state.delete_groups(ours, self._clock_ms())
            for group_id, code in deleted.items():
                if code is ErrorCode.GROUP_ID_NOT_FOUND and self._offsets.fetch(group_id, None):
                    code = ErrorCode.NONE  # a simple consumer's group: offsets only
                if code is ErrorCode.NONE:
                    code = await self._write_tombstones(group_id, self._offsets.delete_group(group_id))
                results[group_id] = code
        return results

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartitionKey]) -> ErrorCode:
        """OffsetDelete: only while no member of the group consumes (Empty group)."""
        code = self._check(group_id)
        if code is not ErrorCode.NONE:
            return code
        if not self._state.is_empty_or_absent(group_id):
            return ErrorCode.NON_EMPTY_GROUP
        return await self._write_tombstones(group_id, self._offsets.delete_offsets(group_id, partitions,
                                                                                   group_is_empty=True))

    async def _write_tombstones(self, group_id: str, pairs: list) -> ErrorCode:
        if not pairs:
            return ErrorCode.NONE
        written = await self._storage.append(self._partition_for(group_id),
                                             offsets_topic.encode_offsets_batch(pairs, self._clock_ms()))
        if written is ErrorCode.NONE:
            return ErrorCode.NONE
        return COMMIT_APPEND_ERRORS.get(written, ErrorCode.UNKNOWN_SERVER_ERROR)

    async def expiry_loop(self) -> None:
        while True:
            await asyncio.sleep(self._settings.retention_check_interval_ms / 1000)
            try:
                await self.expire_offsets()
            except Exception:  # noqa: BLE001
                self._log.exception("offset expiry failed")

    async def expire_offsets(self) -> int:
        """Remove offsets past `offsets.retention.minutes` of empty groups; returns how many."""
        now = self._clock_ms()
        tombstones = self._offsets.expire(now, self._settings.retention_ms, self._state.is_empty_or_absent,
                                          is_stable=lambda g: self._state.state_name(g) == STABLE)
        by_partition: dict[int, list] = {}
        for key, value in tombstones:
            decoded = records.decode_key(key)
            by_partition.setdefault(self._partition_for(decoded.group), []).append((key, value))
            if isinstance(decoded, records.GroupKey) and self._state.is_empty_or_absent(decoded.group):
                self._state.delete_groups([decoded.group], now)  # an empty group without offsets is dead
        for partition, pairs in by_partition.items():
            await self._storage.append(partition, offsets_topic.encode_offsets_batch(pairs, self._clock_ms()))
        if tombstones:
            self._log.info("expired %d committed offsets", len(tombstones))
        return len(tombstones)
