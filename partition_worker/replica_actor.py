"""`PartitionReplica`: the Ray actor, one process, that serves one partition replica at a time.

A process may start as a spare (no partition: its broker keeps a few, so a dormant partition
wakes without waiting for a process to start), `open` a partition, serve it until `close`,
and be given another. Everything of one partition lives in a `ServedPartition` made at each
open (`served_partition.py`): its log, role, data socket, waiting requests and chores; this
shell holds the current one, looks up its broker's coordinator for it, and passes every actor
call to it. Every method returns a value; an exception here means a bug or a broken disk.
"""
from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

from rafka.actors.ray_hooks.untraced import drop_tracing_wrappers
from rafka.common.config import LogConfig
from rafka.common.errors import ErrorCode
from rafka.common.types import TopicPartition
from rafka.partition_worker.broker_checkpoints import PartitionCheckpoint
from rafka.partition_worker.cleaner import CleanableInfo, CleanResult
from rafka.partition_worker.messages import (DeleteRecordsResult, FetchResult, FollowerAppendResult, OffsetLookup,
                                             ProduceResult, ReplicaStatus)
from rafka.partition_worker.replica_state import LeaderAndIsr
from rafka.partition_worker.served_partition import ServedPartition


class PartitionReplica:
    """A replica process. Created by its broker's `BrokerCoordinator` only."""

    def __init__(self, broker_id: int, tp: TopicPartition | None = None, log_dir: str | None = None,
                 config: LogConfig | None = None, socket_path: str | None = None, *,
                 checkpoint: PartitionCheckpoint | None = None, topic_id: uuid.UUID | None = None,
                 coordinator: Any = None) -> None:
        """The replica of `tp`, its log opened; without `tp` a spare process that `open` gives a
        partition later."""
        drop_tracing_wrappers(self)   # (its methods call each other; Ray's tracing is never on here)
        self._broker_id = broker_id
        # Its broker's BrokerCoordinator (ISR changes go through it): a handle, or its (name, namespace),
        # looked up at the first ISR change; a handle unpickled here would import the coordinator's code.
        self._coordinator = coordinator
        self._serving: ServedPartition | None = None
        if tp is not None:
            self._open(tp, log_dir, config, socket_path, checkpoint, topic_id)

    @property
    def serving(self) -> ServedPartition | None:
        """The partition this process serves, or served last (None: a spare never opened)."""
        return self._serving

    async def open(self, tp: TopicPartition, log_dir: str, config: LogConfig, socket_path: str | None,
                   checkpoint: PartitionCheckpoint | None = None, topic_id: uuid.UUID | None = None) -> dict:
        """A spare process (never opened, or closed and given back) takes the partition `tp`:
        its log opens, then it serves; answers as `ready` does."""
        if self._serving is not None and not self._serving.closed.is_set():
            raise RuntimeError(f"this replica process still serves {self._serving.tp}")
        self._open(tp, log_dir, config, socket_path, checkpoint, topic_id)
        return await self.ready()

    def _open(self, tp: TopicPartition, log_dir: str, config: LogConfig, socket_path: str | None,
              checkpoint: PartitionCheckpoint | None, topic_id: uuid.UUID | None) -> None:
        coordinator = self._coordinator_handle if self._coordinator is not None else None
        self._serving = ServedPartition(self._broker_id, tp, log_dir, config, socket_path, checkpoint, topic_id,
                                        coordinator)

    async def _coordinator_handle(self) -> Any:
        """The broker's coordinator, looked up by name at the first call (kept for later openings)."""
        if isinstance(self._coordinator, tuple):
            from rafka.actors.actor_lookup import find_actor  # only here: the unit tests run it without Ray
            name, namespace = self._coordinator
            handle = await asyncio.to_thread(find_actor, name, namespace)
            if handle is None:
                raise LookupError(f"{name} is not running")
            self._coordinator = handle
        return self._coordinator

    # -- the process -----------------------------------------------------------------
    def pid(self) -> int:
        return os.getpid()

    async def ready(self) -> dict:
        """Answers once the log is open and the data socket listens: {"pid", "socket"}."""
        await self._serving.start()
        return {"pid": os.getpid(), "socket": self._serving.data_server.socket_path}

    async def await_close(self) -> None:
        """Returns on a clean close of the partition served now (never, in a spare). Its broker
        keeps this call outstanding: if it fails instead, the replica's process died
        (`ReplicaReconciler` then restarts it)."""
        await (self._serving.closed if self._serving is not None else asyncio.Event()).wait()

    def close(self) -> ReplicaStatus:
        """Clean shutdown of the partition served: see `ServedPartition.close`. The process
        stays, a spare again, until its broker gives it another partition or ends it."""
        return self._serving.close()

    # -- control: the role, config, status, log dirs, compaction -----------------------------
    def become(self, order: LeaderAndIsr) -> ErrorCode:
        return self._serving.become(order)

    def update_config(self, config: LogConfig) -> None:
        self._serving.update_config(config)

    def status(self) -> ReplicaStatus:
        return self._serving.status()

    def flush(self) -> int:
        return self._serving.flush()

    def mark_log_dir_offline(self, reason: str) -> None:
        self._serving.mark_log_dir_offline(reason)

    def apply_retention(self, now_ms: int | None = None) -> int:
        return self._serving.upkeep.apply_retention(now_ms)

    def cleanable(self, first_dirty_offset: int | None = None) -> CleanableInfo:
        return self._serving.upkeep.cleanable(first_dirty_offset)

    async def clean(self, dedupe_buffer_bytes: int, first_dirty_offset: int | None = None) -> CleanResult:
        return await self._serving.upkeep.clean(dedupe_buffer_bytes, first_dirty_offset)

    def quiet(self) -> bool:
        return self._serving.quiet()

    def idle_for_ms(self) -> float:
        return self._serving.idle_for_ms()

    # -- data: most of it comes over the data socket (`data_server.py`) -----------------------
    def append(self, batches: list, acks: int) -> list[ProduceResult]:
        return self._serving.append(batches, acks)

    async def read(self, fetch_offset: int, max_bytes: int, max_wait_ms: int = 0) -> FetchResult:
        return await self._serving.read(fetch_offset, max_bytes, max_wait_ms)

    def replica_read(self, follower: int, leader_epoch: int, fetch_offset: int, max_bytes: int) -> FetchResult:
        return self._serving.replica_read(follower, leader_epoch, fetch_offset, max_bytes)

    def list_offset(self, timestamp: int) -> OffsetLookup:
        return self._serving.list_offset(timestamp)

    async def delete_records(self, offset: int) -> DeleteRecordsResult:
        return self._serving.delete_records_now(offset)

    def delete_records_now(self, offset: int) -> DeleteRecordsResult:
        return self._serving.delete_records_now(offset)

    # -- a follower ------------------------------------------------------------------
    def append_as_follower(self, records: memoryview | bytes, leader_high_watermark: int,
                           leader_log_start_offset: int) -> FollowerAppendResult:
        return self._serving.append_as_follower(records, leader_high_watermark, leader_log_start_offset)

    def truncate_to(self, offset: int) -> int:
        return self._serving.truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> int:
        return self._serving.truncate_fully_and_start_at(offset)

    def offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int) -> tuple[ErrorCode, int, int]:
        return self._serving.offset_for_leader_epoch(current_leader_epoch, leader_epoch)

    def latest_leader_epoch(self) -> int:
        return self._serving.latest_leader_epoch()
