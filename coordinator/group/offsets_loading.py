"""Which `__consumer_offsets` partitions the group coordinator of one broker has loaded: loading
a partition it now leads (replaying its log into the committed offsets and the groups, retried
with backoff while it cannot be read) and unloading one it lost. The ownership answer for a
group (NONE, COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR) comes from here.

Runs on the front end's event loop with its `GroupCoordinator`; a load is a task of its own,
cancelled when the partition is no longer led here.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import TYPE_CHECKING, Callable

from rafka.common.errors import ErrorCode
from rafka.common.types import OFFSETS_TOPIC
from rafka.coordinator.group import offsets_records as records
from rafka.coordinator.group import offsets_topic
from rafka.coordinator.group.group_messages import Outcome
from rafka.coordinator.group.group_state import GroupCoordinatorState
from rafka.coordinator.group.offset_store import OffsetStore
from rafka.coordinator.group.txn_offsets import PendingTxnOffsets

if TYPE_CHECKING:
    from rafka.coordinator.group.group_coordinator import GroupSettings, OffsetsStorage

# A failed load of a partition is retried after load_retry_backoff_ms, doubling up to this.
_MAX_LOAD_RETRY_BACKOFF_MS = 5000


class OffsetsPartitions:
    """The loaded and loading `__consumer_offsets` partitions of one broker.

    A loaded partition's groups are in `state` and its offsets in `offsets`; unloading removes
    them and hands the answers of their waiting requests to `complete`. `loads_ended` is set
    whenever a load ends, so the coordinator's timer loop looks at the groups it brought."""

    def __init__(self, settings: GroupSettings, storage: OffsetsStorage, state: GroupCoordinatorState,
                 offsets: OffsetStore, *, clock_ms: Callable[[], int], complete: Callable[[Outcome], None],
                 loads_ended: asyncio.Event, log: logging.LoggerAdapter,
                 txn_offsets: PendingTxnOffsets | None = None) -> None:
        self._settings = settings
        self._storage = storage
        self._state = state
        self._offsets = offsets
        self._clock_ms = clock_ms
        self._complete = complete
        self._loads_ended = loads_ended
        self._txn_offsets = txn_offsets
        self._log = log
        self._owned: set[int] = set()      # loaded partitions
        self._loading: dict[int, asyncio.Task] = {}

    def partition_for(self, group_id: str) -> int:
        return offsets_topic.partition_for(group_id, self._settings.partitions)

    def led(self) -> set[int]:
        """The partitions loaded or loading here."""
        return self._owned | set(self._loading)

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

    def loading_tasks(self) -> list[asyncio.Task]:
        return list(self._loading.values())

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
        backoff_ms = self._settings.load_retry_backoff_ms
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
            self._loads_ended.set()

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
            if self._txn_offsets is not None:
                self._txn_offsets.seen_batches(partition, batch)
            for key, value in offsets_topic.replay(batch, open_transactions=open_transactions, on_unreadable=skip):
                try:
                    self._offsets.apply(key, value)
                except records.OffsetsRecordError as e:
                    skip(str(e))
                    continue
                count += 1
        now = self._clock_ms()
        for group_id in self._offsets.groups():
            snapshot = self._offsets.group_snapshot(group_id)
            if snapshot is not None and self.partition_for(group_id) == partition:
                self._state.load(snapshot, now)
        held = self._txn_offsets.load(partition, open_transactions) if self._txn_offsets is not None else 0
        self._owned.add(partition)
        if held:
            self._log.info("%s-%d: %d offsets of open transactions held until their markers", OFFSETS_TOPIC,
                           partition, held)
        self._log.info("loaded %s-%d: %d records (%d unreadable, skipped) in %.3f s", OFFSETS_TOPIC, partition,
                       count, skipped, time.monotonic() - started)

    def _unload(self, partition: int) -> None:
        groups = self._offsets.unload_partition(partition, self._settings.partitions)
        groups += [g for g in self._state.group_ids() if self.partition_for(g) == partition and g not in groups]
        self._complete(self._state.unload(groups))
        self._log.info("unloaded %s-%d (%d groups)", OFFSETS_TOPIC, partition, len(groups))
